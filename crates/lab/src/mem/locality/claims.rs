//! mem.locality's claim: column order costs more once the array outgrows the caches.

use oslab_model::Claim;
use oslab_units::human_bytes;

use oslab_harness::check::{Check, Condition, Rule};

/// Beyond the caches the column walk costs more than this many row walks ...
pub const LARGE_RATIO_ABOVE: f64 = 4.0;

/// ... and more than this many times its ratio inside L1.
pub const GROWTH_ABOVE: f64 = 3.0;

/// The largest array must be at least this many times the last-level cache.
pub const BEYOND_LLC: f64 = 2.0;

pub const ORDER: Check = Check {
    id: "loop-order-matters-out-of-cache",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Loop order hardly matters while the array fits in the cache and matters a lot once it does not",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\" (locality of reference)",
};

/// The claim on the ratios (bytes, ratio), smallest array first, with the
/// last-level cache sysfs describes.
pub(super) fn claim(ratios: &[(u64, f64)], llc: Option<(String, u64)>) -> Claim {
    let (Some(&(small_b, small)), Some(&(large_b, large))) = (ratios.first(), ratios.last()) else {
        return ORDER.not_judged(
            "column/row ratios inside and beyond the caches",
            "no array was measured",
        );
    };
    let (s, l) = (human_bytes(small_b), human_bytes(large_b));
    let conditions = [
        Condition::new(
            format!("column/row time at {l}"),
            "x",
            Rule::Above(LARGE_RATIO_ABOVE),
            large,
        ),
        Condition::new(
            format!("ratio at {l} / ratio at {s}"),
            "x",
            Rule::Above(GROWTH_ABOVE),
            large / small,
        ),
    ];
    if let Some((name, llc)) = &llc
        && (large_b as f64) < BEYOND_LLC * *llc as f64
    {
        let expectation = conditions
            .iter()
            .map(|c| c.rule.describe(&c.subject, &c.unit))
            .collect::<Vec<_>>()
            .join(", and ");
        return ORDER.not_testable(
            &expectation,
            format!(
                "the largest array ({l}) is not beyond the caches here: sysfs describes a {} {name}, and it should be at least {BEYOND_LLC}x that",
                human_bytes(*llc)
            ),
        );
    }
    let context = ratios
        .iter()
        .map(|(b, r)| format!("{}: {r:.2}x", human_bytes(*b)))
        .collect::<Vec<_>>()
        .join(", ");
    ORDER.judge(&conditions, &context, |o| {
        if o.holds() {
            format!(
                "a column walk uses one element of each line it loads; in the cache the line stays for the next column, out of it every access is a miss{}",
                if small >= 1.5 {
                    format!(". Even inside L1 the ratio is {small:.1}x here: the row loop runs through consecutive elements, which the compiler can vectorise (SIMD), and a stride of one row cannot be")
                } else {
                    String::new()
                }
            )
        } else if o.failed(0) {
            format!("beyond the caches a column walk costs only {large:.1}x a row walk: the prefetcher keeps up with its constant stride here, or the row walk is as slow per element (an unoptimised loop)")
        } else {
            format!("inside L1 the ratio is already {small:.1}x, so loop order costs nearly as much in the cache as out of it")
        }
    })
}
