//! Pareto utilities over loss vectors (every coordinate minimised): dominance, Deb's
//! constrained dominance, fast non-dominated sorting and crowding distance (Deb, Pratap,
//! Agarwal & Meyarivan 2002, "A fast and elitist multiobjective genetic algorithm: NSGA-II"),
//! and the exact hypervolume for two and three objectives.
//!
//! Hand-written: the planner, the reports and the algorithms all need these, and core may not
//! pull in an optimisation framework for them. The crates that offer non-dominated sorting do
//! so inside a whole evolutionary-algorithm framework, and none offers an exact 2–3-objective
//! hypervolume; the sweeps below are a few dozen lines each and are checked against hand
//! computed values and against brute force in the tests.

/// True when `a` is no worse than `b` everywhere and better somewhere.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    let mut better = false;
    for (x, y) in a.iter().zip(b) {
        if x > y {
            return false;
        }
        if x < y {
            better = true;
        }
    }
    better
}

/// Deb's constrained dominance: a feasible point (violation 0) beats an infeasible one, of
/// two infeasible points the smaller violation wins, and feasible points compare by
/// dominance.
pub fn constrained_dominates(a: &[f64], violation_a: f64, b: &[f64], violation_b: f64) -> bool {
    match (violation_a == 0.0, violation_b == 0.0) {
        (true, true) => dominates(a, b),
        (true, false) => true,
        (false, true) => false,
        (false, false) => violation_a < violation_b,
    }
}

/// The fronts of `points`, best first, each a list of indices in ascending order. With
/// `violations` the order is by constrained dominance.
pub fn non_dominated_sort(points: &[Vec<f64>], violations: Option<&[f64]>) -> Vec<Vec<usize>> {
    let n = points.len();
    let beats = |i: usize, j: usize| match violations {
        Some(v) => constrained_dominates(&points[i], v[i], &points[j], v[j]),
        None => dominates(&points[i], &points[j]),
    };
    let mut dominated_by_count = vec![0usize; n];
    let mut dominates_list: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in (i + 1)..n {
            if beats(i, j) {
                dominates_list[i].push(j);
                dominated_by_count[j] += 1;
            } else if beats(j, i) {
                dominates_list[j].push(i);
                dominated_by_count[i] += 1;
            }
        }
    }
    let mut fronts = Vec::new();
    let mut current: Vec<usize> = (0..n).filter(|i| dominated_by_count[*i] == 0).collect();
    while !current.is_empty() {
        let mut next = Vec::new();
        for &i in &current {
            for &j in &dominates_list[i] {
                dominated_by_count[j] -= 1;
                if dominated_by_count[j] == 0 {
                    next.push(j);
                }
            }
        }
        next.sort_unstable();
        fronts.push(current);
        current = next;
    }
    fronts
}

/// The indices of the non-dominated points (the first front), ascending.
pub fn pareto_front(points: &[Vec<f64>]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| !points.iter().any(|q| dominates(q, &points[i])))
        .collect()
}

/// Crowding distance of each member of `front` (same order): the perimeter of the cuboid
/// spanned by its neighbours in every objective, normalised by the front's extent; the
/// extremes of each objective get infinity so they are always kept.
pub fn crowding_distance(points: &[Vec<f64>], front: &[usize]) -> Vec<f64> {
    let m = front.len();
    let mut distance = vec![0.0; m];
    if m <= 2 {
        return vec![f64::INFINITY; m];
    }
    let dims = points[front[0]].len();
    #[allow(clippy::needless_range_loop)] // k indexes every point of the front, not one slice
    for k in 0..dims {
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|a, b| points[front[*a]][k].total_cmp(&points[front[*b]][k]));
        let lo = points[front[order[0]]][k];
        let hi = points[front[order[m - 1]]][k];
        distance[order[0]] = f64::INFINITY;
        distance[order[m - 1]] = f64::INFINITY;
        let span = hi - lo;
        if span <= 0.0 || !span.is_finite() {
            continue;
        }
        for w in 1..m - 1 {
            let gap = points[front[order[w + 1]]][k] - points[front[order[w - 1]]][k];
            distance[order[w]] += gap / span;
        }
    }
    distance
}

/// The volume dominated by `points` and bounded by `reference` (every coordinate minimised),
/// exact, for two or three objectives; `None` for other dimensions. Points that do not
/// strictly dominate the reference add nothing.
pub fn hypervolume(points: &[Vec<f64>], reference: &[f64]) -> Option<f64> {
    let inside: Vec<&Vec<f64>> = points
        .iter()
        .filter(|p| p.len() == reference.len() && p.iter().zip(reference).all(|(x, r)| x < r))
        .collect();
    match reference.len() {
        2 => Some(hv2(
            inside.iter().map(|p| (p[0], p[1])).collect(),
            reference[0],
            reference[1],
        )),
        3 => Some(hv3(&inside, reference)),
        _ => None,
    }
}

/// Area dominated by 2-D points below `(rx, ry)`: a sweep in ascending x.
fn hv2(mut pts: Vec<(f64, f64)>, rx: f64, ry: f64) -> f64 {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut area = 0.0;
    let mut lowest_y = ry;
    for (x, y) in pts {
        if y < lowest_y {
            area += (rx - x) * (lowest_y - y);
            lowest_y = y;
        }
    }
    area
}

/// Volume dominated by 3-D points: slabs between consecutive z values, each the 2-D area of
/// the points at or below it.
fn hv3(pts: &[&Vec<f64>], reference: &[f64]) -> f64 {
    let mut order: Vec<&Vec<f64>> = pts.to_vec();
    order.sort_by(|a, b| a[2].total_cmp(&b[2]));
    let mut volume = 0.0;
    for i in 0..order.len() {
        let top = order.get(i + 1).map_or(reference[2], |p| p[2]);
        let height = top - order[i][2];
        if height <= 0.0 {
            continue;
        }
        let slice: Vec<(f64, f64)> = order[..=i].iter().map(|p| (p[0], p[1])).collect();
        volume += hv2(slice, reference[0], reference[1]) * height;
    }
    volume
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[&[f64]]) -> Vec<Vec<f64>> {
        v.iter().map(|p| p.to_vec()).collect()
    }

    #[test]
    fn dominance_needs_one_strict_improvement() {
        assert!(dominates(&[1.0, 2.0], &[1.0, 3.0]));
        assert!(!dominates(&[1.0, 2.0], &[1.0, 2.0]));
        assert!(!dominates(&[0.0, 3.0], &[1.0, 2.0]));
        assert!(constrained_dominates(&[9.0, 9.0], 0.0, &[0.0, 0.0], 0.5));
        assert!(constrained_dominates(&[9.0, 9.0], 0.1, &[0.0, 0.0], 0.5));
        assert!(!constrained_dominates(&[0.0, 0.0], 0.5, &[9.0, 9.0], 0.0));
    }

    #[test]
    fn sorts_into_fronts() {
        let p = pts(&[
            &[1.0, 4.0],
            &[2.0, 2.0],
            &[4.0, 1.0],
            &[3.0, 3.0],
            &[5.0, 5.0],
        ]);
        assert_eq!(
            non_dominated_sort(&p, None),
            vec![vec![0, 1, 2], vec![3], vec![4]]
        );
        assert_eq!(pareto_front(&p), vec![0, 1, 2]);
        // The best point is infeasible: it drops behind every feasible one.
        let v = [0.0, 2.0, 0.0, 0.0, 1.0];
        assert_eq!(
            non_dominated_sort(&p, Some(&v)),
            vec![vec![0, 2, 3], vec![4], vec![1]]
        );
    }

    #[test]
    fn crowding_keeps_extremes_and_spreads() {
        let p = pts(&[&[0.0, 4.0], &[1.0, 3.0], &[3.0, 1.0], &[4.0, 0.0]]);
        let d = crowding_distance(&p, &[0, 1, 2, 3]);
        assert_eq!(d[0], f64::INFINITY);
        assert_eq!(d[3], f64::INFINITY);
        // Point 1: neighbours span 3 of 4 in each objective.
        assert!((d[1] - 1.5).abs() < 1e-12);
        assert!((d[2] - 1.5).abs() < 1e-12);
    }

    #[test]
    fn hypervolume_matches_hand_computed_values() {
        let p = pts(&[
            &[1.0, 3.0],
            &[2.0, 2.0],
            &[3.0, 1.0],
            &[3.5, 3.5],
            &[5.0, 0.0],
        ]);
        // Staircase below (4, 4): 3·1 + 2·1 + 1·1 = 6; (5, 0) lies outside the box.
        assert_eq!(hypervolume(&p, &[4.0, 4.0]), Some(6.0));
        let cube = pts(&[&[0.0, 0.0, 0.0]]);
        assert_eq!(hypervolume(&cube, &[1.0, 2.0, 3.0]), Some(6.0));
        let two = pts(&[&[0.0, 0.0, 1.0], &[0.5, 0.5, 0.0]]);
        // z in [0,1): square 0.5·0.5; z in [1,2): the union 1·1 → 0.25 + 1.0.
        assert_eq!(hypervolume(&two, &[1.0, 1.0, 2.0]), Some(1.25));
        assert_eq!(hypervolume(&p, &[1.0]), None);
    }

    #[test]
    fn hypervolume_3d_agrees_with_a_grid_count() {
        let p = pts(&[
            &[0.2, 0.6, 0.4],
            &[0.6, 0.2, 0.2],
            &[0.4, 0.4, 0.8],
            &[0.8, 0.8, 0.0],
        ]);
        let exact = hypervolume(&p, &[1.0, 1.0, 1.0]).unwrap();
        // Cell centres of a 50³ grid: every coordinate a multiple of 0.2 lies on cell faces,
        // so the count is exact.
        let n = 50;
        let mut inside = 0usize;
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let c = [
                        (i as f64 + 0.5) / n as f64,
                        (j as f64 + 0.5) / n as f64,
                        (k as f64 + 0.5) / n as f64,
                    ];
                    if p.iter().any(|q| q.iter().zip(&c).all(|(a, b)| a <= b)) {
                        inside += 1;
                    }
                }
            }
        }
        let counted = inside as f64 / (n * n * n) as f64;
        assert!((exact - counted).abs() < 1e-9, "{exact} vs {counted}");
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        fn point_sets() -> impl Strategy<Value = Vec<Vec<f64>>> {
            (2usize..=3).prop_flat_map(|m| {
                prop::collection::vec(prop::collection::vec(0.0f64..1.0, m), 1..30)
            })
        }

        proptest! {
            #[test]
            fn fronts_partition_the_points_and_the_first_is_non_dominated(pts in point_sets()) {
                let fronts = non_dominated_sort(&pts, None);
                let mut all: Vec<usize> = fronts.iter().flatten().copied().collect();
                all.sort_unstable();
                prop_assert_eq!(all, (0..pts.len()).collect::<Vec<_>>());
                prop_assert_eq!(&fronts[0], &pareto_front(&pts));
                // Every member of a later front is dominated by some member of the one before.
                for w in fronts.windows(2) {
                    for &j in &w[1] {
                        prop_assert!(w[0].iter().any(|&i| dominates(&pts[i], &pts[j])));
                    }
                }
            }

            #[test]
            fn hypervolume_depends_on_the_front_only_and_grows(pts in point_sets(), extra in prop::collection::vec(0.0f64..1.0, 3)) {
                let m = pts[0].len();
                let reference = vec![1.1; m];
                let hv = hypervolume(&pts, &reference).unwrap();
                let front: Vec<Vec<f64>> = pareto_front(&pts).into_iter().map(|i| pts[i].clone()).collect();
                prop_assert!((hv - hypervolume(&front, &reference).unwrap()).abs() < 1e-12);
                prop_assert!(hv >= 0.0 && hv <= 1.1f64.powi(m as i32));
                let mut more = pts.clone();
                more.push(extra[..m].to_vec());
                prop_assert!(hypervolume(&more, &reference).unwrap() >= hv - 1e-12);
            }
        }
    }
}
