# Sourced by the benchmarks that compare dbtax with a peer round by round. `ratio_ci R1 R2 ...`
# prints the rounds' ratios as their geometric mean and its 95% t interval ("0.98 [0.91,
# 1.06]"; one round: the ratio alone). On this shared machine one run's throughput moves by
# ±15% from one second to the next, so only an interval says whether a goal was met.
ratio_ci() {
  awk -v list="$*" 'BEGIN {
    n = split(list, r, " ");
    split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", t, " ");
    s = 0; for (i = 1; i <= n; i++) { l[i] = log(r[i]); s += l[i] }
    m = s / n;
    if (n < 2) { printf "%.2f", exp(m); exit }
    v = 0; for (i = 1; i <= n; i++) v += (l[i] - m) ^ 2;
    q = (n - 1 <= 30) ? t[n - 1] : 2.0;
    h = q * sqrt(v / (n - 1) / n);
    printf "%.2f [%.2f, %.2f]", exp(m), exp(m - h), exp(m + h) }'
}

# `compare_row N PEER DBTAX`: ROUNDS rounds (each tool first in every other one, so neither
# always runs on the server the other warmed) of the functions PEER and DBTAX, each called
# with N and printing "count rate cpu_seconds" (count: queries or transactions, for the CPU per
# one; rate: the tool's own QPS or TPS). Prints one table row: N, the peer's and dbtax's
# client µs per count, their mean rates, then the CPU and rate ratios dbtax/peer, each over
# all rounds and as `ratio_ci` of the rounds'.
compare_row() {
  local n=$1 peer=$2 dbtax=$3 r q1 r1 c1 q2 r2 c2 pq=0 pc=0 pr=0 dq=0 dc=0 dr=0 cpu_r=() rate_r=()
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
      read -r q1 r1 c1 < <("$peer" "$n"); read -r q2 r2 c2 < <("$dbtax" "$n")
    else
      read -r q2 r2 c2 < <("$dbtax" "$n"); read -r q1 r1 c1 < <("$peer" "$n")
    fi
    pq=$((pq + q1)); dq=$((dq + q2))
    pr=$(awk -v a="$pr" -v b="$r1" 'BEGIN {print a + b}'); dr=$(awk -v a="$dr" -v b="$r2" 'BEGIN {print a + b}')
    pc=$(awk -v a="$pc" -v b="$c1" 'BEGIN {print a + b}'); dc=$(awk -v a="$dc" -v b="$c2" 'BEGIN {print a + b}')
    cpu_r+=("$(awk -v a="$c2" -v b="$q2" -v c="$c1" -v d="$q1" 'BEGIN {print (a / b) / (c / d)}')")
    rate_r+=("$(awk -v a="$r2" -v b="$r1" 'BEGIN {print a / b}')")
  done
  awk -v n="$n" -v pq="$pq" -v pc="$pc" -v dq="$dq" -v dc="$dc" -v pr="$pr" -v dr="$dr" -v rounds="$ROUNDS" \
      -v cci="$(ratio_ci "${cpu_r[@]}")" -v rci="$(ratio_ci "${rate_r[@]}")" 'BEGIN {
    pus = pc * 1e6 / pq; dus = dc * 1e6 / dq; prate = pr / rounds; drate = dr / rounds;
    printf "%-8s %12.2f %12.2f %9.0f %9.0f %9.2f   %-18s %9.2f   %-18s\n", n, pus, dus, prate, drate, dus / pus, cci, drate / prate, rci }'
}
