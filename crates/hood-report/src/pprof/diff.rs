//! `hood diff --format pprof`: NEW's profile with BASE's subtracted, as `go tool pprof
//! -diff_base BASE NEW` builds it in memory: BASE's samples with every value negated and the
//! label `pprof::base=true` (from which pprof takes the total that percentages are of),
//! beside NEW's. `go tool pprof -top` of the file prints what `go tool pprof -top -diff_base
//! BASE.pb.gz NEW.pb.gz` prints of hood's own exports of the two recordings.

use std::collections::HashMap;
use std::io::Write;

use hood_model::profile::aggregate::Filter;
use hood_model::profile::Profile;

use super::{build, proto, write_gz};
use crate::ReportError;

/// The label pprof marks the base profile's samples with.
const BASE_LABEL: &str = "pprof::base";

/// NEW's pprof profile with BASE's samples added negated (see the module documentation).
/// Sample types are NEW's; a type BASE lacks counts 0 there.
pub fn build_diff(base: &Profile, new: &Profile, filter: &Filter) -> proto::Profile {
    let mut out = build(new, filter);
    let b = build(base, filter);
    let mut st = Table::new(std::mem::take(&mut out.string_table));
    // Which of BASE's values goes in each of NEW's sample types.
    let name = |p: &[String], v: &proto::ValueType| {
        let get = |i: i64| string(p, i).to_string();
        (get(v.r#type), get(v.unit))
    };
    let new_types: Vec<(String, String)> =
        out.sample_type.iter().map(|v| name(&st.table, v)).collect();
    let base_types: Vec<(String, String)> = b
        .sample_type
        .iter()
        .map(|v| name(&b.string_table, v))
        .collect();
    let from: Vec<Option<usize>> = new_types
        .iter()
        .map(|t| base_types.iter().position(|u| u == t))
        .collect();
    let (mo, lo, fo) = (
        out.mapping.len() as u64,
        out.location.len() as u64,
        out.function.len() as u64,
    );
    let bs = &b.string_table;
    for m in &b.mapping {
        out.mapping.push(proto::Mapping {
            id: m.id + mo,
            filename: st.add(bs, m.filename),
            build_id: st.add(bs, m.build_id),
            ..m.clone()
        });
    }
    for f in &b.function {
        out.function.push(proto::Function {
            id: f.id + fo,
            name: st.add(bs, f.name),
            system_name: st.add(bs, f.system_name),
            filename: st.add(bs, f.filename),
            start_line: f.start_line,
        });
    }
    for l in &b.location {
        out.location.push(proto::Location {
            id: l.id + lo,
            mapping_id: if l.mapping_id == 0 {
                0
            } else {
                l.mapping_id + mo
            },
            line: l
                .line
                .iter()
                .map(|x| proto::Line {
                    function_id: x.function_id + fo,
                    ..x.clone()
                })
                .collect(),
            ..l.clone()
        });
    }
    let base_label = proto::Label {
        key: st.id(BASE_LABEL),
        str: st.id("true"),
        ..proto::Label::default()
    };
    for s in &b.sample {
        let mut label: Vec<proto::Label> = s
            .label
            .iter()
            .map(|l| proto::Label {
                key: st.add(bs, l.key),
                str: st.add(bs, l.str),
                num: l.num,
                num_unit: st.add(bs, l.num_unit),
            })
            .collect();
        label.push(base_label.clone());
        out.sample.push(proto::Sample {
            location_id: s.location_id.iter().map(|&l| l + lo).collect(),
            value: from
                .iter()
                .map(|i| {
                    i.and_then(|i| s.value.get(i))
                        .map_or(0, |v| v.saturating_neg())
                })
                .collect(),
            label,
        });
    }
    out.string_table = st.table;
    out
}

/// String `i` of a table ("" when out of it).
fn string(table: &[String], i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| table.get(i))
        .map_or("", String::as_str)
}

/// The merged string table under construction: NEW's, then what BASE adds.
struct Table {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Table {
    fn new(table: Vec<String>) -> Table {
        let mut index = HashMap::with_capacity(table.len());
        for (i, s) in table.iter().enumerate() {
            index.entry(s.clone()).or_insert(i as i64);
        }
        Table { table, index }
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&j) = self.index.get(s) {
            return j;
        }
        let j = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), j);
        j
    }

    /// String `i` of `from` in this table.
    fn add(&mut self, from: &[String], i: i64) -> i64 {
        self.id(string(from, i))
    }
}

/// Write the gzip-compressed difference profile (NEW minus BASE) of the samples `filter`
/// keeps.
pub fn render_pprof_diff(
    base: &Profile,
    new: &Profile,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    write_gz(&build_diff(base, new, filter), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::tests::small_profile;

    #[test]
    fn base_samples_are_negated_labeled_and_their_strings_remapped() {
        let new = small_profile();
        let mut base = small_profile();
        // BASE names its functions differently, so its strings must be added to the table.
        for f in &mut base.funcs {
            f.name = format!("old_{}", f.name);
        }
        let f = Filter::default();
        let one = build(&new, &f);
        let d = build_diff(&base, &new, &f);
        assert_eq!(d.sample.len(), 2 * one.sample.len());
        let s = |i: i64| d.string_table[i as usize].as_str();
        let key = d.string_table.iter().position(|x| x == BASE_LABEL).unwrap() as i64;
        let mut sums = [0i64; 2];
        for smp in &d.sample {
            let based = smp.label.iter().any(|l| l.key == key && s(l.str) == "true");
            sums[usize::from(based)] += smp.value[0];
            for &loc in &smp.location_id {
                let l = &d.location[loc as usize - 1];
                assert_eq!(l.id, loc);
                let func = &d.function[l.line[0].function_id as usize - 1];
                assert_eq!(s(func.name).starts_with("old_"), based);
                if l.mapping_id != 0 {
                    assert_eq!(d.mapping[l.mapping_id as usize - 1].id, l.mapping_id);
                }
            }
        }
        let total: i64 = one.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(sums, [total, -total]);
    }
}
