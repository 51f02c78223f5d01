//! CSV output: for each result, its raw samples, its summaries and its claims, one
//! file each, named after the experiment (`cpu.syscall.samples.csv`, ...).

use oslab_model::ExperimentResult;

fn to_bytes(header: &[&str], rows: Vec<Vec<String>>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).expect("in-memory write");
    for r in rows {
        w.write_record(&r).expect("in-memory write");
    }
    w.into_inner().expect("in-memory flush")
}

/// (file name, contents) for every CSV file of one result.
pub fn files(r: &ExperimentResult) -> Vec<(String, Vec<u8>)> {
    let id = &r.experiment;
    let mut samples = Vec::new();
    for m in &r.measurements {
        for (i, v) in m.samples.iter().enumerate() {
            samples.push(vec![
                m.name.clone(),
                i.to_string(),
                v.to_string(),
                m.unit.clone(),
            ]);
        }
    }
    let summary: Vec<Vec<String>> = r
        .measurements
        .iter()
        .filter_map(|m| {
            let s = m.summary.as_ref()?;
            Some(vec![
                m.name.clone(),
                m.unit.clone(),
                s.n.to_string(),
                s.median.to_string(),
                s.ci95.low.to_string(),
                s.ci95.high.to_string(),
                s.mean.to_string(),
                s.min.to_string(),
                s.max.to_string(),
                s.mad.to_string(),
                s.cv.to_string(),
                s.outliers.len().to_string(),
            ])
        })
        .collect();
    let claims: Vec<Vec<String>> = r
        .claims
        .iter()
        .map(|c| {
            vec![
                c.id.clone(),
                c.verdict.label().to_string(),
                c.text.clone(),
                c.expectation.clone(),
                c.observed.clone(),
                c.why.clone(),
            ]
        })
        .collect();
    let findings: Vec<Vec<String>> = r
        .findings
        .iter()
        .map(|f| {
            vec![
                f.name.clone(),
                f.value.to_string(),
                f.unit.clone(),
                f.detail.clone(),
            ]
        })
        .collect();
    vec![
        (
            format!("{id}.samples.csv"),
            to_bytes(&["measurement", "index", "value", "unit"], samples),
        ),
        (
            format!("{id}.summary.csv"),
            to_bytes(
                &[
                    "measurement",
                    "unit",
                    "n",
                    "median",
                    "ci95_low",
                    "ci95_high",
                    "mean",
                    "min",
                    "max",
                    "mad",
                    "cv",
                    "outliers",
                ],
                summary,
            ),
        ),
        (
            format!("{id}.findings.csv"),
            to_bytes(&["finding", "value", "unit", "detail"], findings),
        ),
        (
            format!("{id}.claims.csv"),
            to_bytes(
                &["claim", "verdict", "text", "expectation", "observed", "why"],
                claims,
            ),
        ),
    ]
}
