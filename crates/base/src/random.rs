//! The one seeded random generator of the workspace: SplitMix64 (Steele, Lea and Flood,
//! 2014). Small, fast, and the same sequence on every machine and every release, which
//! is what reproducible inputs, labels and bootstrap resamples need; it is not for
//! anything that must be unpredictable.

/// SplitMix64: a 64-bit state advanced by a fixed odd increment and mixed on the way
/// out. Every seed, 0 included, gives a full-period stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, from the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `(0, 1]`, from the top 53 bits: never 0, so its logarithm is finite.
    pub fn next_f64_nonzero(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` by multiply-and-shift (Lemire), one draw per call; the bias is
    /// below `n / 2^64`. `n` must not be 0.
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0, "SplitMix64::below(0)");
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Two independent standard-normal values by Box–Muller, from two draws in `(0, 1]`:
    /// `r·cos θ` and `r·sin θ` with `r = √(−2 ln u1)`, `θ = 2π·u2`.
    pub fn standard_normal_pair(&mut self) -> (f64, f64) {
        let (u1, u2) = (self.next_f64_nonzero(), self.next_f64_nonzero());
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = 2.0 * std::f64::consts::PI * u2;
        (radius * angle.cos(), radius * angle.sin())
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn the_sequence_is_pinned() {
        // The reference values of SplitMix64 for seed 0 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let (mut a, mut b, mut c) = (SplitMix64::new(7), SplitMix64::new(7), SplitMix64::new(8));
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..100).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn below_stays_in_range_and_is_uniform_enough() {
        let mut r = SplitMix64::new(1);
        for n in [1usize, 2, 3, 7, 10, 1000, usize::MAX] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
        let mut counts = [0usize; 10];
        for _ in 0..100_000 {
            counts[r.below(10)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn below_is_multiply_shift_of_one_draw() {
        // Bootstrap resamples depend on this exact mapping.
        let (mut a, mut b) = (SplitMix64::new(42), SplitMix64::new(42));
        for n in [5usize, 30, 1 << 20] {
            let x = a.below(n);
            assert_eq!(x, ((b.next_u64() as u128 * n as u128) >> 64) as usize);
        }
    }

    #[test]
    fn unit_draws_stay_in_their_intervals() {
        let mut r = SplitMix64::new(3);
        for _ in 0..10_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            let y = r.next_f64_nonzero();
            assert!(y > 0.0 && y <= 1.0);
        }
    }

    #[test]
    fn normals_look_standard() {
        let mut r = SplitMix64::new(11);
        let n = 50_000;
        let v: Vec<f64> = (0..n / 2)
            .flat_map(|_| {
                let (a, b) = r.standard_normal_pair();
                [a, b]
            })
            .collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!(mean.abs() < 0.02, "{mean}");
        assert!((var - 1.0).abs() < 0.03, "{var}");
    }
}
