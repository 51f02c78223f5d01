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
    /// (x, y) pairs.
    pub points: Vec<[f64; 2]>,
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
