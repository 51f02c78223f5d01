use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    Linear,
    /// Logarithmic with ticks at powers of two (sizes in bytes).
    Log2,
    /// Logarithmic with ticks at powers of ten.
    Log10,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub label: String,
    pub unit: String,
    pub scale: Scale,
}

impl Axis {
    pub fn new(label: &str, unit: &str, scale: Scale) -> Axis {
        Axis {
            label: label.into(),
            unit: unit.into(),
            scale,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesStyle {
    Line,
    Points,
    LinePoints,
    /// Vertical bars from the x axis; x values are bar positions.
    Bars,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub style: SeriesStyle,
    /// (x, y) pairs; a y of NaN (null in JSON) is a point not measured, which
    /// plots show as "-", never as 0.
    #[serde(deserialize_with = "points_with_nulls")]
    pub points: Vec<[f64; 2]>,
}

/// JSON has no NaN: serde_json writes it as null. Reads null back as NaN, so a
/// plot with an unmeasured point can be read again.
fn points_with_nulls<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<[f64; 2]>, D::Error> {
    Vec::<[Option<f64>; 2]>::deserialize(d).map(|v| {
        v.into_iter()
            .map(|[x, y]| [x.unwrap_or(f64::NAN), y.unwrap_or(f64::NAN)])
            .collect()
    })
}

/// A vertical reference line, e.g. a cache size from sysfs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// File-name-safe id, unique within an experiment.
    pub id: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    #[serde(default)]
    pub markers: Vec<Marker>,
    /// Category names for bar charts: `x_labels[i]` names x = i.
    #[serde(default)]
    pub x_labels: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a point never measured was written as 0 (a bar at 0 ms); as
    /// NaN it is null in JSON and must read back as a point still not measured.
    #[test]
    fn an_unmeasured_point_is_null_in_json_and_reads_back_as_none() {
        let s = Series {
            name: "mean".into(),
            style: SeriesStyle::Bars,
            points: vec![[0.0, 1.5], [1.0, f64::NAN]],
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("[1.0,null]"), "{json}");
        let back: Series = serde_json::from_str(&json).unwrap();
        assert_eq!(back.points[0], [0.0, 1.5]);
        assert!(back.points[1][1].is_nan());
    }
}
