//! Timing statistics (median, minimum, first) and durations for people.

use std::time::Duration;

/// Median, minimum and first of a set of durations.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stat {
    /// Median in seconds (the mean of the two middle values for an even count).
    pub median_s: f64,
    /// Minimum in seconds.
    pub min_s: f64,
    /// The first sample in seconds, in the order given: a process's first repetition, which
    /// pays for what later ones reuse (fresh host memory, pinning), and which neither the median
    /// nor the minimum of few repetitions shows.
    pub first_s: f64,
}

impl Stat {
    /// Statistics of `samples` (zero for none).
    pub fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut v: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
        let first_s = v[0];
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let median_s = if v.len() % 2 == 1 {
            v[mid]
        } else {
            (v[mid - 1] + v[mid]) / 2.0
        };
        Self {
            median_s,
            min_s: v[0],
            first_s,
        }
    }
}

/// A duration for people: `812 µs`, `43.2 ms`, `2.41 s`.
pub fn fmt_duration(d: Duration) -> String {
    fmt_secs(d.as_secs_f64())
}

/// Seconds for people (see [`fmt_duration`]).
pub fn fmt_secs(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_median_and_min() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|&x| Duration::from_millis(x))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            Stat::of(&ms(&[30, 10, 20])),
            Stat {
                median_s: 0.020,
                min_s: 0.010,
                first_s: 0.030,
            }
        );
        assert_eq!(
            Stat::of(&ms(&[40, 10, 20, 30])),
            Stat {
                median_s: 0.025,
                min_s: 0.010,
                first_s: 0.040,
            }
        );
        assert_eq!(Stat::of(&[]), Stat::default());
    }

    #[test]
    fn durations_format_by_magnitude() {
        assert_eq!(fmt_secs(0.000_812), "812 µs");
        assert_eq!(fmt_secs(0.0432), "43.2 ms");
        assert_eq!(fmt_secs(2.412), "2.41 s");
    }
}
