//! A tiny, fast, seedable generator (SplitMix64) for the hot loop and for trial order. The
//! workers need a few random ids per query; a crate would add nothing but weight.

/// SplitMix64: passes BigCrush, one add and three multiplies per number.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed; equal seeds give equal sequences.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// A seed from the clock and a salt (thread index), for workers.
    pub fn from_time(salt: u64) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Rng::new(nanos ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (lo ≤ hi).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + ((self.next_u64() as u128 * (hi - lo + 1) as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller), for the simulated target.
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Shuffle in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.range(0, i as u64) as usize;
            items.swap(i, j);
        }
    }

    /// sysbench's string format: `groups` groups of 11 random digits joined by '-', written
    /// into `out` (cleared first) so the hot loop reuses one buffer.
    pub fn sysbench_string(&mut self, groups: usize, out: &mut String) {
        out.clear();
        for g in 0..groups {
            if g > 0 {
                out.push('-');
            }
            let mut v = self.next_u64();
            for _ in 0..11 {
                out.push((b'0' + (v % 10) as u8) as char);
                v /= 10;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_stays_inside_bounds_and_hits_both_ends() {
        let mut r = Rng::new(1);
        let (mut lo, mut hi) = (false, false);
        for _ in 0..10_000 {
            let v = r.range(3, 7);
            assert!((3..=7).contains(&v));
            lo |= v == 3;
            hi |= v == 7;
        }
        assert!(lo && hi);
    }

    #[test]
    fn sysbench_string_has_sysbench_length() {
        let mut r = Rng::new(2);
        let mut s = String::new();
        r.sysbench_string(10, &mut s);
        assert_eq!(s.len(), 119);
        r.sysbench_string(5, &mut s);
        assert_eq!(s.len(), 59);
    }
}
