//! A small SVG plotting kit for the HTML reports: scales, axes with ticks, marks and a colour
//! map, written as strings. Enough for scatter, line, bar and parallel-coordinate plots, so the
//! reports need no plotting crate and no JavaScript, and open offline.

use std::fmt::Write;

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Compact number text for labels (4 significant digits).
pub fn num(v: f64) -> String {
    significant(v, 4)
}

/// `v` with at most `digits` significant digits (at least 1) after the integer part, which is
/// kept whole, trailing zeros dropped; in exponent form below 0.001 and from 100,000 on.
pub fn significant(v: f64, digits: usize) -> String {
    let digits = digits.max(1);
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.*e}", digits - 1);
        return match s.split_once('e') {
            Some((m, e)) if m.contains('.') => {
                format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
            }
            _ => s,
        };
    }
    let s = format!(
        "{v:.*}",
        (digits as i32 - 1 - a.log10().floor() as i32).max(0) as usize
    );
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A value-to-pixel mapping along one axis.
#[derive(Debug, Clone)]
pub enum Scale {
    /// Numbers, linear or logarithmic (base 10) between `lo` and `hi`.
    Numeric { lo: f64, hi: f64, log: bool },
    /// Labels at evenly spaced positions `0..n`.
    Categories(Vec<String>),
}

impl Scale {
    /// A numeric scale covering `values` with 8% padding; log only when all are positive.
    pub fn fit(values: impl IntoIterator<Item = f64>, log: bool) -> Scale {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        let mut all_positive = true;
        for v in values.into_iter().filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
            all_positive &= v > 0.0;
        }
        if !lo.is_finite() {
            return Scale::Numeric {
                lo: 0.0,
                hi: 1.0,
                log: false,
            };
        }
        let log = log && all_positive;
        let (mut l, mut h) = if log {
            (lo.log10(), hi.log10())
        } else {
            (lo, hi)
        };
        if h - l <= f64::EPSILON * l.abs().max(1.0) {
            // Relative room as well: ±0.5 is lost in the rounding of values past about 1e16.
            // (On a log axis a decade either side; its top must still be a finite value.)
            let (half, top) = if log {
                (0.5, f64::MAX.log10())
            } else {
                (0.5f64.max(l.abs() * 0.05), f64::MAX)
            };
            l = (l - half).max(-f64::MAX);
            h = (h + half).min(top);
        } else {
            // Enough room that a 5 px mark at the extreme stays off the frame. Each end scaled
            // first, and the ends kept finite: values of opposite sign near ±f64::MAX span
            // more than a double holds.
            let pad = h * 0.08 - l * 0.08;
            l = (l - pad).max(-f64::MAX);
            h = (h + pad).min(f64::MAX);
        }
        let (lo, hi) = if log {
            (10f64.powf(l), 10f64.powf(h))
        } else {
            (l, h)
        };
        Scale::Numeric { lo, hi, log }
    }

    /// Position in `[0, 1]` of a value; categorical values are looked up by label.
    pub fn unit(&self, v: f64) -> f64 {
        match self {
            Scale::Numeric { lo, hi, log: true } => {
                (v.max(f64::MIN_POSITIVE).log10() - lo.log10()) / (hi.log10() - lo.log10())
            }
            // Halved first (exact for doubles), so a span past f64::MAX stays finite.
            Scale::Numeric { lo, hi, .. } => (v / 2.0 - lo / 2.0) / (hi / 2.0 - lo / 2.0),
            Scale::Categories(c) => (v + 0.5) / c.len().max(1) as f64,
        }
    }

    /// Position in `[0, 1]` of a label or number written as text.
    pub fn unit_of(&self, text: &str) -> Option<f64> {
        match self {
            Scale::Categories(c) => c
                .iter()
                .position(|x| x == text)
                .map(|i| self.unit(i as f64)),
            _ => text.trim().parse::<f64>().ok().map(|v| self.unit(v)),
        }
    }

    /// Tick positions in `[0, 1]` with their labels.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        match self {
            Scale::Categories(c) => {
                // Long category lists get every k-th label so labels do not overlap.
                let step = c.len().div_ceil(12).max(1);
                c.iter()
                    .enumerate()
                    .step_by(step)
                    .map(|(i, l)| (self.unit(i as f64), l.clone()))
                    .collect()
            }
            Scale::Numeric { lo, hi, log: true } => {
                let (a, b) = (lo.log10().ceil() as i32, hi.log10().floor() as i32);
                if b < a {
                    return Scale::Numeric {
                        lo: *lo,
                        hi: *hi,
                        log: false,
                    }
                    .ticks();
                }
                let step = ((b - a) / 6 + 1).max(1) as usize;
                (a..=b)
                    .step_by(step)
                    .map(|e| {
                        let v = 10f64.powi(e);
                        (self.unit(v), num(v))
                    })
                    .collect()
            }
            Scale::Numeric { lo, hi, .. } => {
                // Half the span, which stays finite where the span would not.
                let half = hi / 2.0 - lo / 2.0;
                let raw = half / 2.5;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| half / s <= 3.0)
                    .unwrap_or(10.0 * mag);
                let mut v = (lo / step).ceil() * step;
                let mut out = Vec::new();
                while v <= *hi && out.len() < 12 {
                    out.push((
                        self.unit(v),
                        num(if v.abs() < step * 1e-9 { 0.0 } else { v }),
                    ));
                    v += step;
                }
                out
            }
        }
    }
}

/// Viridis-like colour for `t` in `[0, 1]` (0 dark purple, 1 yellow); readable on white and
/// for most colour-vision deficiencies.
pub fn color(t: f64) -> String {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Distinct colours for overlaid series.
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// One chart: an `<svg>` with a title, a plotting area and optional axes.
#[derive(Debug)]
pub struct Chart {
    pub width: f64,
    pub height: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    body: String,
}

impl Chart {
    /// Starts `<svg id=...>` with a title. Margins leave room for tick labels.
    pub fn new(id: &str, title: &str, width: f64, height: f64) -> Chart {
        let mut body = String::new();
        let _ = write!(
            body,
            r#"<svg id="{}" class="plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img"><title>{}</title><text class="plot-title" x="{}" y="18" text-anchor="middle">{}</text>"#,
            esc(id),
            esc(title),
            width / 2.0,
            esc(title)
        );
        Chart {
            width,
            height,
            left: 64.0,
            right: 16.0,
            top: 30.0,
            bottom: 44.0,
            body,
        }
    }

    /// Changes the margins (left, right, top, bottom).
    pub fn margins(mut self, left: f64, right: f64, top: f64, bottom: f64) -> Chart {
        (self.left, self.right, self.top, self.bottom) = (left, right, top, bottom);
        self
    }

    /// Pixel x of a unit position.
    pub fn px(&self, u: f64) -> f64 {
        self.left + u * (self.width - self.left - self.right)
    }

    /// Pixel y of a unit position (0 at the bottom).
    pub fn py(&self, u: f64) -> f64 {
        self.height - self.bottom - u * (self.height - self.top - self.bottom)
    }

    /// Draws both axes with ticks, grid lines and labels.
    pub fn axes(&mut self, x: &Scale, x_label: &str, y: &Scale, y_label: &str) {
        let (x0, x1, y0, y1) = (self.px(0.0), self.px(1.0), self.py(0.0), self.py(1.0));
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<g class="axes"><rect x="{x0:.1}" y="{y1:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#999"/>"##,
            x1 - x0,
            y0 - y1
        );
        let x_ticks = x.ticks();
        // Category names can be long; numbers are short by construction.
        let room = match x {
            Scale::Categories(_) => (x1 - x0) / x_ticks.len().max(1) as f64,
            _ => f64::INFINITY,
        };
        for (u, label) in x_ticks {
            let px = self.px(u);
            let label = fit_label(&label, room);
            let _ = write!(
                s,
                r##"<line x1="{px:.1}" y1="{y0:.1}" x2="{px:.1}" y2="{:.1}" stroke="#999"/><text class="tick" x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                y0 + 4.0,
                y0 + 16.0,
                esc(&label)
            );
        }
        // Category labels end at the axis and must start right of the rotated axis title.
        let y_room = match y {
            Scale::Categories(_) => x0 - 30.0,
            _ => f64::INFINITY,
        };
        for (u, label) in y.ticks() {
            let py = self.py(u);
            let label = fit_label(&label, y_room);
            let _ = write!(
                s,
                r##"<line x1="{x0:.1}" y1="{py:.1}" x2="{x1:.1}" y2="{py:.1}" stroke="#eee"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                x0 - 6.0,
                py + 4.0,
                esc(&label)
            );
        }
        let _ = write!(
            s,
            r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="axis-label" transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text></g>"#,
            (x0 + x1) / 2.0,
            self.height - 8.0,
            esc(x_label),
            (y0 + y1) / 2.0,
            esc(y_label)
        );
        self.body.push_str(&s);
    }

    /// A circle at unit position `(ux, uy)` with a hover title.
    pub fn circle(&mut self, ux: f64, uy: f64, r: f64, fill: &str, class: &str, title: &str) {
        let _ = write!(
            self.body,
            r#"<circle class="{class}" cx="{:.1}" cy="{:.1}" r="{r}" fill="{fill}"><title>{}</title></circle>"#,
            self.px(ux),
            self.py(uy),
            esc(title)
        );
    }

    /// A polyline through unit positions.
    pub fn polyline(&mut self, pts: &[(f64, f64)], stroke: &str, class: &str, extra: &str) {
        let mut d = String::with_capacity(pts.len() * 12);
        for (i, (ux, uy)) in pts.iter().enumerate() {
            if i > 0 {
                d.push(' ');
            }
            let _ = write!(d, "{:.1},{:.1}", self.px(*ux), self.py(*uy));
        }
        let _ = write!(
            self.body,
            r#"<polyline class="{class}" points="{d}" fill="none" stroke="{stroke}" {extra}/>"#
        );
    }

    /// Raw SVG markup (already escaped by the caller).
    pub fn raw(&mut self, markup: &str) {
        self.body.push_str(markup);
    }

    /// Text at pixel coordinates.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, class: &str, text: &str) {
        let _ = write!(
            self.body,
            r#"<text class="{class}" x="{x:.1}" y="{y:.1}" text-anchor="{anchor}">{}</text>"#,
            esc(text)
        );
    }

    /// The finished `<svg>` element.
    pub fn finish(mut self) -> String {
        self.body.push_str("</svg>");
        self.body
    }
}

/// Points of a best-so-far series (value after trial `i + 1`, `None` before the first) as a
/// step line: flat until the next improvement, then straight down (or up) to it.
pub fn step_line(series: &[Option<f64>], x: &Scale, y: &Scale) -> Vec<(f64, f64)> {
    let mut line = Vec::new();
    let mut last: Option<f64> = None;
    for (i, b) in series.iter().enumerate() {
        let Some(b) = *b else { continue };
        let ux = x.unit((i + 1) as f64);
        if let Some(prev) = last
            && prev != b
        {
            line.push((ux, y.unit(prev)));
        }
        line.push((ux, y.unit(b)));
        last = Some(b);
    }
    line
}

/// An id fragment made of `[A-Za-z0-9_-]` only, and one-to-one: letters, digits and `-` stay,
/// any other character becomes `_<hex code>_`, so `a.b` and `a_b` (both valid parameter names)
/// get different ids.
pub fn id_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
        } else {
            out.push_str(&format!("_{:x}_", u32::from(c)));
        }
    }
    out
}

/// Estimated width of a character of an 11 px sans-serif label, in pixels: wide (East Asian)
/// characters take a full em, `W` and `M` nearly one, other capitals more than lower case.
/// Generous on purpose: a label cut a little early beats one running into the next axis.
fn char_px(c: char) -> f64 {
    let wide = matches!(c as u32,
        0x1100..=0x115F | 0x2E80..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x1F300..=0x1FAFF
        | 0x20000..=0x3FFFD);
    match c {
        _ if wide => 11.5,
        'W' | 'M' | 'm' | 'w' | '@' | '%' => 10.5,
        _ if c.is_uppercase() => 8.0,
        _ => 6.5,
    }
}

/// A label fitted into `room` pixels: on one line, cut with an ellipsis when longer, so it does
/// not run into its neighbours or the next axis (the trial table shows values whole). At least
/// three characters are kept.
pub fn fit_label(label: &str, room: f64) -> String {
    let one_line: Vec<char> = label
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.iter().map(|&c| char_px(c)).sum::<f64>() <= room {
        return one_line.into_iter().collect();
    }
    let ellipsis = char_px('…');
    let mut used = ellipsis;
    let kept: String = one_line
        .iter()
        .enumerate()
        .take_while(|&(i, &c)| {
            used += char_px(c);
            i < 2 || used <= room
        })
        .map(|(_, &c)| c)
        .collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits_are_kept_and_trailing_zeros_dropped() {
        let cases = [
            (0.999995, 6, "0.999995"),
            (0.999995, 4, "1"),
            (0.864, 6, "0.864"),
            (-12.5, 6, "-12.5"),
            (123456.0, 6, "1.23456e5"),
            (0.00012345678, 6, "1.23457e-4"),
            // The integer part is never rounded away.
            (42.0, 1, "42"),
            (7.0, 0, "7"),
        ];
        for (v, digits, want) in cases {
            assert_eq!(significant(v, digits), want, "{v} to {digits}");
        }
    }

    #[test]
    fn scales_map_into_the_unit_interval_and_ticks_are_round() {
        let s = Scale::fit([0.0, 10.0], false);
        assert!(s.unit(0.0) > 0.0 && s.unit(10.0) < 1.0);
        let labels: Vec<String> = s.ticks().into_iter().map(|(_, l)| l).collect();
        assert_eq!(labels, ["0", "2", "4", "6", "8", "10"]);
        let log = Scale::fit([0.001, 10.0], true);
        let labels: Vec<String> = log.ticks().into_iter().map(|(_, l)| l).collect();
        assert_eq!(labels, ["0.001", "0.01", "0.1", "1", "10"]);
        assert_eq!(num(0.0001), "1e-4");
        assert_eq!(num(123456.0), "1.235e5");
        assert_eq!(fit_label("adam", 40.0), "adam");
        assert_eq!(fit_label("line1\nline2 is long", 65.0), "line1 lin…");
        assert_eq!(fit_label("xxxxxxxx", 1.0), "xx…");
        // Wide letters and East Asian characters take more room than `x`.
        assert_eq!(fit_label(&"W".repeat(40), 65.0), "WWWWW…");
        assert_eq!(fit_label(&"語".repeat(40), 65.0), "語語語語語…");
        let c = Scale::Categories(vec!["a".into(), "b".into()]);
        assert_eq!(c.unit_of("b"), Some(0.75));
        assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
        assert_eq!(color(0.0), "#440154");
        assert_eq!(id_part("lr"), "lr");
        let (x, y) = (Scale::fit([1.0, 3.0], false), Scale::fit([1.0, 2.0], false));
        let steps = step_line(&[None, Some(2.0), Some(1.0)], &x, &y);
        let at = |i: f64, v: f64| (x.unit(i), y.unit(v));
        assert_eq!(steps, [at(2.0, 2.0), at(3.0, 2.0), at(3.0, 1.0)]);
        assert_eq!(id_part("a.b"), "a_2e_b");
        assert_eq!(id_part("a_b"), "a_5f_b");
        assert_eq!(id_part("é/x"), "_e9__2f_x");
    }

    #[test]
    fn a_scale_of_equal_values_has_room_at_any_magnitude() {
        for v in [0.0, 0.3, -2.0, 1e17, -1e20, 1e300, 1e307, 1e-300] {
            for log in [false, true] {
                let s = Scale::fit([v, v], log);
                let u = s.unit(v);
                assert!(u > 0.0 && u < 1.0, "{v} (log {log}) at {u}");
                assert!(!s.ticks().is_empty(), "{v} (log {log}) has no ticks");
            }
        }
    }

    /// Values of opposite sign near ±f64::MAX span more than a double holds: every value still
    /// maps inside the frame and the ticks are finite, in order and inside it.
    #[test]
    fn a_scale_wider_than_a_double_stays_finite() {
        let cases: [&[f64]; 3] = [
            &[-f64::MAX, f64::MAX],
            &[-1.7976931348623157e308, 1e308, 0.5],
            &[-1e308, 1e308],
        ];
        for values in cases {
            let s = Scale::fit(values.iter().copied(), false);
            for v in values {
                let u = s.unit(*v);
                assert!((0.0..=1.0).contains(&u), "{values:?}: {v} at {u}");
            }
            let ticks = s.ticks();
            assert!(ticks.len() >= 2, "{values:?}: {ticks:?}");
            assert!(
                ticks
                    .windows(2)
                    .all(|w| w[0].0.is_finite() && w[0].0 < w[1].0 && w[1].0 <= 1.0),
                "{values:?}: {ticks:?}"
            );
        }
    }
}
