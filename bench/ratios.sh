# Sourced by the benchmarks that compare dbtax with a peer round by round: `ratio_ci R1 R2 ...`
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
