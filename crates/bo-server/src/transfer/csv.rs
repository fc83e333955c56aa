//! The trials of a study as CSV for spreadsheets and pandas: one row per trial, one column per
//! parameter (tree order) and per metric of the final measurement, empty where a parameter is
//! inactive or a value missing. Numbers are written so they read back exactly.

use std::io::Write;

use bo_core::{ParamValue, StudySpec, Trial};

use crate::wire::format_time;

/// The header line of a study of `spec`.
pub fn header(spec: &StudySpec, out: &mut impl Write) -> std::io::Result<()> {
    let mut header: Vec<String> = vec!["trial".into(), "state".into()];
    header.extend(spec.space.params().iter().map(|p| p.id.clone()));
    header.extend(spec.metrics.iter().map(|m| m.id.clone()));
    header.extend(["measurements", "start_time", "end_time", "client_id", "infeasible_reason", "stop_time"].map(String::from));
    line(out, &header)
}

/// The line of trial `t` of a study of `spec`.
pub fn row(spec: &StudySpec, t: &Trial, out: &mut impl Write) -> std::io::Result<()> {
    let active: std::collections::HashSet<&str> = spec.space.active_ids(&t.assignment).into_iter().collect();
    let mut row: Vec<String> = vec![t.id.to_string(), t.state.as_str().to_owned()];
    for p in &spec.space.params() {
        row.push(match t.assignment.get(&p.id) {
            Some(v) if active.contains(p.id.as_str()) => value(v),
            _ => String::new(),
        });
    }
    for m in &spec.metrics {
        row.push(t.final_measurement.as_ref().and_then(|f| f.metrics.get(&m.id)).map(|x| number(*x)).unwrap_or_default());
    }
    row.push(t.measurements.len().to_string());
    row.push(format_time(t.start_time_ms));
    row.push(t.end_time_ms.map(format_time).unwrap_or_default());
    row.push(t.client_id.clone());
    row.push(t.infeasible_reason.clone());
    row.push(t.stop_time_ms.map(format_time).unwrap_or_default());
    line(out, &row)
}

fn value(v: &ParamValue) -> String {
    match v {
        ParamValue::Float(x) => number(*x),
        ParamValue::Int(i) => i.to_string(),
        ParamValue::Categorical(s) => s.to_string(),
    }
}

/// The shortest text that parses back to `x` (`0.1`, `1e-5`, `3.0`).
fn number(x: f64) -> String {
    format!("{x:?}")
}

fn line(out: &mut impl Write, fields: &[String]) -> std::io::Result<()> {
    let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    out.write_all(quoted.join(",").as_bytes())?;
    out.write_all(b"\r\n")
}

/// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) { format!("\"{}\"", field.replace('"', "\"\"")) } else { field.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\"\nbye"), "\"say \"\"hi\"\"\nbye\"");
        assert_eq!(number(0.1), "0.1");
        assert_eq!(number(1e-5), "1e-5");
        assert_eq!(number(3.0), "3.0");
        assert_eq!(number(5e-324).parse::<f64>().unwrap(), 5e-324);
    }
}
