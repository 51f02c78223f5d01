use oslab_model::Verdict;

use super::claims::matches_claim;

#[test]
fn the_worst_error_decides_and_nothing_compared_is_not_judged() {
    assert_eq!(matches_claim(6, 0.1).verdict, Verdict::Holds);
    assert_eq!(matches_claim(6, 0.11).verdict, Verdict::Differs);
    let none = matches_claim(0, 0.0);
    assert_eq!(none.verdict, Verdict::NotJudged);
    assert!(none.why.contains("need root"), "{}", none.why);
}
