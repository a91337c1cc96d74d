//! Overflow-free arithmetic on parameter ranges. A spec may span the whole `i64` range or
//! doubles near `f64::MAX`, where `max - min` wraps (integers) or becomes infinite (doubles);
//! every sampler and encoder goes through these helpers instead of subtracting bounds itself.

/// The most grid points a stepped double may have: beyond 2^53 consecutive grid indices are no
/// longer exact in `f64`, so neighbouring points would coincide.
pub const MAX_DOUBLE_GRID_POINTS: f64 = 9_007_199_254_740_992.0;

/// Whether `[min, max]` with this step has few enough points to tell apart (see
/// [`MAX_DOUBLE_GRID_POINTS`]); false when `max - min` overflows.
pub fn double_grid_fits(min: f64, max: f64, step: f64) -> bool {
    let n = (max - min) / step;
    n.is_finite() && n < MAX_DOUBLE_GRID_POINTS
}

/// Relative tolerance of a stepped double's bounds and grid: a value this fraction of the
/// span (at least of 1) beyond `max` is still taken as `max`.
pub const GRID_TOLERANCE: f64 = 1e-9;

/// The index of the last grid point `min + k*step` not above `max`, absorbing division noise
/// such as `0.3 / 0.1 = 2.9999999999999996` without adding points past `max` on fine grids
/// (a relative tolerance did: 10^15 points gained 10^6 beyond `max`).
pub fn double_last(min: f64, max: f64, step: f64) -> f64 {
    let n = (max - min) / step;
    let k = n.round();
    // The quotient's own rounding error grows with it (a few ulps of `n`), and so does that of
    // `max - min` over the step: bounds near 1e6 written to 1e-6 carry it in their last digits.
    let operands = 4.0 * f64::EPSILON * min.abs().max(max.abs()) / step;
    let tol = (4.0 * f64::EPSILON * n.abs())
        .max(operands.min(0.25))
        .max(1e-6);
    if (n - k).abs() <= tol && !beyond_max(min + k * step, max, span(min, max)) {
        k
    } else {
        n.floor()
    }
}

/// Whether a grid point lies beyond `max` by more than the bounds' tolerance: `max` 0.99999999
/// with step 0.1 is within a millionth of a step of 1, which must still not be proposed.
fn beyond_max(point: f64, max: f64, span: f64) -> bool {
    let ulps = 8.0 * f64::EPSILON * max.abs();
    point > max + (GRID_TOLERANCE * span.max(1.0)).max(ulps)
}

/// `hi - lo`, or `f64::MAX` when the difference overflows (so tolerances stay finite).
pub fn span(lo: f64, hi: f64) -> f64 {
    let s = hi - lo;
    if s.is_finite() { s } else { f64::MAX }
}

/// The point a fraction `u` of the way from `lo` to `hi`, inside `[lo, hi]` even when
/// `hi - lo` exceeds `f64::MAX`.
pub fn lerp(lo: f64, hi: f64, u: f64) -> f64 {
    let s = hi - lo;
    let x = if s.is_finite() {
        lo + u * s
    } else {
        lo * (1.0 - u) + hi * u
    };
    x.clamp(lo, hi)
}

/// How far `x` lies from `lo` towards `hi` (0 at `lo`, 1 at `hi`), computed on halves when
/// `hi - lo` overflows.
pub fn fraction(x: f64, lo: f64, hi: f64) -> f64 {
    let s = hi - lo;
    if s.is_finite() {
        (x - lo) / s
    } else {
        (x * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5)
    }
}

/// The midpoint of `[lo, hi]` without overflowing.
pub fn midpoint(lo: f64, hi: f64) -> f64 {
    let m = (lo + hi) / 2.0;
    if m.is_finite() {
        m
    } else {
        lo * 0.5 + hi * 0.5
    }
}

/// `(hi - lo) / d` without overflowing (the normal priors' sd is the range over 6).
pub fn span_over(lo: f64, hi: f64, d: f64) -> f64 {
    let s = (hi - lo) / d;
    if s.is_finite() { s } else { hi / d - lo / d }
}

/// The index of the last grid point `min + k*step` not above `max` (`step` defaults to 1);
/// exact over the whole `i64` range.
pub fn int_last(min: i64, max: i64, step: Option<i64>) -> u64 {
    let s = i128::from(step.unwrap_or(1).max(1));
    let k = (i128::from(max) - i128::from(min)).max(0) / s;
    u64::try_from(k).unwrap_or(u64::MAX)
}

/// The grid point `min + k*step`, saturating at the `i64` bounds (never reached for
/// `k <= int_last`).
pub fn int_at(min: i64, step: Option<i64>, k: u64) -> i64 {
    let v = i128::from(min) + i128::from(k) * i128::from(step.unwrap_or(1));
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The grid index of `v`, or `None` when it is below `min` or off the grid.
pub fn int_index(v: i64, min: i64, step: Option<i64>) -> Option<u64> {
    let s = i128::from(step.unwrap_or(1).max(1));
    let d = i128::from(v) - i128::from(min);
    if d < 0 || d % s != 0 {
        return None;
    }
    u64::try_from(d / s).ok()
}

/// The grid index nearest to a real position `x` on the grid `min + k*step`, clamped to
/// `[0, last]`.
pub fn int_nearest(x: f64, min: i64, step: Option<i64>, last: u64) -> u64 {
    let k = ((x - min as f64) / step.unwrap_or(1) as f64).round();
    if k.is_nan() || k <= 0.0 {
        return 0;
    }
    // `as` saturates at u64::MAX for positions beyond the range.
    (k as u64).min(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_grids_span_the_whole_i64_range() {
        assert_eq!(int_last(i64::MIN, i64::MAX, None), u64::MAX);
        assert_eq!(int_last(i64::MIN, i64::MAX, Some(i64::MAX)), 2);
        assert_eq!(int_last(1, 9, Some(2)), 4);
        assert_eq!(int_at(i64::MIN, None, u64::MAX), i64::MAX);
        assert_eq!(int_at(i64::MIN, Some(i64::MAX), 2), i64::MAX - 1);
        assert_eq!(int_index(i64::MAX, i64::MIN, None), Some(u64::MAX));
        assert_eq!(int_index(4, 1, Some(2)), None);
        assert_eq!(int_index(0, 1, Some(2)), None);
        assert_eq!(int_index(5, 1, Some(2)), Some(2));
        assert_eq!(int_nearest(1e30, i64::MIN, None, u64::MAX), u64::MAX);
        assert_eq!(int_nearest(-1e30, 0, None, 10), 0);
        assert_eq!(int_nearest(4.2, 1, Some(2), 4), 2);
    }

    #[test]
    fn double_ranges_beyond_f64_max_stay_finite() {
        let (lo, hi) = (-1.7e308, 1.7e308);
        assert_eq!(span(lo, hi), f64::MAX);
        assert_eq!(lerp(lo, hi, 0.0), lo);
        assert_eq!(lerp(lo, hi, 1.0), hi);
        assert_eq!(lerp(lo, hi, 0.5), 0.0);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        assert!(close(lerp(lo, hi, 0.75), 0.85e308));
        assert!(close(fraction(0.85e308, lo, hi), 0.75));
        assert!(close(midpoint(1e308, 1.7e308), 1.35e308));
        assert!(close(span_over(lo, hi, 6.0), 1.7e308 / 3.0));
        assert_eq!(double_last(0.0, 0.3, 0.1), 3.0);
        assert_eq!(double_last(0.0, 0.95, 0.1), 9.0);
        assert_eq!(double_last(0.0, 1.0, 1e-15), 1e15);
        // Bounds whose last digits carry the grid: `max - min` is off by far more than `n`'s ulps.
        assert_eq!(double_last(1000000.000001, 1000000.000009, 0.000001), 8.0);
        assert_eq!(double_last(1000000.0, 1000000.7, 0.25), 2.0);
        // A `max` just below a grid point does not reach it.
        assert_eq!(double_last(0.0, 0.99999999, 0.1), 9.0);
        assert_eq!(double_last(0.0, 0.29999999, 0.1), 2.0);
        assert_eq!(double_last(0.0, 0.2999999999999, 0.1), 3.0);
        assert_eq!(lerp(0.0, 1.0, 0.25), 0.25);
        assert_eq!(fraction(0.25, 0.0, 1.0), 0.25);
    }
}
