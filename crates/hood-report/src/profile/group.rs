//! Regrouping of already aggregated rows (O(rows), not O(samples)).

use std::collections::HashMap;

use hood_model::profile::{FuncId, Profile};

/// Samples per file of the sampled function, heaviest first (ties by name), from rows of
/// (leaf function, samples). No frame counts as `[unknown]`.
pub(crate) fn dso_rows(
    prof: &Profile,
    rows: impl Iterator<Item = (Option<FuncId>, u64)>,
) -> Vec<(&str, u64)> {
    let mut m: HashMap<&str, u64> = HashMap::new();
    for (f, n) in rows {
        let dso = f
            .and_then(|id| prof.funcs.get(id as usize))
            .map_or("[unknown]", |f| f.dso.as_str());
        *m.entry(dso).or_insert(0) += n;
    }
    let mut v: Vec<(&str, u64)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use hood_model::profile::aggregate::{by_dso, by_function, Filter};

    #[test]
    fn same_as_counting_samples_by_dso() {
        let p = super::super::testutil::known();
        let f = Filter::default();
        let fast = dso_rows(
            &p,
            by_function(&p, &f).into_iter().map(|r| (r.key, r.count)),
        );
        let slow: Vec<(String, u64)> = by_dso(&p, &f)
            .into_iter()
            .map(|r| (r.key, r.count))
            .collect();
        let fast: Vec<(String, u64)> = fast.into_iter().map(|(d, n)| (d.to_string(), n)).collect();
        assert_eq!(fast, slow);
        assert_eq!(fast[0], ("work".to_string(), 830));
    }
}
