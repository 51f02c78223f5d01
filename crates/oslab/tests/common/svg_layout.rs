//! Reads the text of an SVG plot as oslab writes it and finds labels that cover
//! each other, leave the picture, or sit on the data. Text boxes are estimated from
//! the font size and the number of characters (about 0.55 em a character, ascent
//! 0.75 em, descent 0.2 em), independently of the renderer's own estimate; the
//! browser test measures the real boxes.

/// An axis-aligned box: left, top, right, bottom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect(pub f64, pub f64, pub f64, pub f64);

impl Rect {
    fn overlaps(&self, o: &Rect) -> bool {
        const SLACK: f64 = 0.5;
        self.0 < o.2 - SLACK && o.0 < self.2 - SLACK && self.1 < o.3 - SLACK && o.1 < self.3 - SLACK
    }
    fn inside(&self, o: &Rect) -> bool {
        self.0 >= o.0 - 0.5 && self.1 >= o.1 - 0.5 && self.2 <= o.2 + 0.5 && self.3 <= o.3 + 0.5
    }
}

#[derive(Debug, Clone)]
pub struct Text {
    pub class: String,
    pub content: String,
    pub bounds: Rect,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(tag[start..].split('"').next()?.to_string())
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The picture's box (its viewBox).
pub fn view_box(svg: &str) -> Rect {
    let v: Vec<f64> = attr(svg, "viewBox")
        .expect("a viewBox")
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    Rect(v[0], v[1], v[0] + v[2], v[1] + v[3])
}

/// The plot area, `<rect class="plot-area">`.
pub fn plot_area(svg: &str) -> Rect {
    let tag = svg
        .split('<')
        .find(|t| t.starts_with("rect ") && t.contains("class=\"plot-area\""))
        .expect("a plot area");
    let (x, y) = (num(tag, "x"), num(tag, "y"));
    Rect(x, y, x + num(tag, "width"), y + num(tag, "height"))
}

/// Every `<text>` with its estimated box.
pub fn texts(svg: &str) -> Vec<Text> {
    let mut out = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let (tag, rest) = piece.split_once('>').expect("a closed tag");
        let content = unescape(rest.split("</text>").next().unwrap_or(""));
        let size = attr(tag, "font-size")
            .and_then(|v| v.parse().ok())
            .unwrap_or(12.0);
        let (x, y) = (num(tag, "x"), num(tag, "y"));
        let w = content.chars().count() as f64 * size * 0.55;
        let (a, b) = match attr(tag, "text-anchor").as_deref() {
            Some("middle") => (-w / 2.0, w / 2.0),
            Some("end") => (-w, 0.0),
            _ => (0.0, w),
        };
        let (asc, desc) = (0.75 * size, 0.2 * size);
        let upright = attr(tag, "transform").is_some_and(|t| t.starts_with("rotate(-90"));
        // A quarter turn to the left about (x, y): (x + dx, y + dy) -> (x + dy, y - dx).
        let bounds = if upright {
            Rect(x - asc, y - b, x + desc, y - a)
        } else {
            Rect(x + a, y - asc, x + b, y + desc)
        };
        out.push(Text {
            class: attr(tag, "class").unwrap_or_default(),
            content,
            bounds,
        });
    }
    out
}

/// Every fault of one SVG's layout, in words.
pub fn faults(svg: &str) -> Vec<String> {
    let view = view_box(svg);
    let area = plot_area(svg);
    let t = texts(svg);
    let mut out = Vec::new();
    for (i, a) in t.iter().enumerate() {
        if !a.bounds.inside(&view) {
            out.push(format!("{:?} leaves the picture", a.content));
        }
        if a.bounds.overlaps(&area) {
            out.push(format!("{} {:?} sits on the plot area", a.class, a.content));
        }
        for b in &t[i + 1..] {
            if a.bounds.overlaps(&b.bounds) {
                out.push(format!("{:?} and {:?} overlap", a.content, b.content));
            }
        }
    }
    out
}
