//! `[pricing."PROVIDER/MODEL"]` of the configuration file: what a model's tokens cost, in USD,
//! for the usage ledger and USD budgets (`usage/`, docs/teams.md).
//!
//! ```toml
//! [pricing."provider_a/gpt-4.1-mini"]
//! input_per_million = 0.40          # USD per million input tokens
//! output_per_million = 1.60         # USD per million output tokens
//!
//! [pricing."provider_b/*"]          # every model of provider_b without a price of its own
//! input_per_million = 3
//! output_per_million = 15
//!
//! [pricing."search_engine_a/answer"] # the search engine's answers, which report no tokens
//! per_call = 0.005                  # USD per call, beside the tokens' price
//! ```
//!
//! A model's price is its own entry, else its provider's `*`. Costs are kept in nano-USD (USD ×
//! 10⁹) as whole numbers, so the ledger's sums are exact.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The most USD per million tokens, or per call, a price may give.
const MAX_USD: f64 = 1_000_000.0;

/// One model's price.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Price {
    pub input_per_million: f64,
    pub output_per_million: f64,
    pub per_call: f64,
}

impl Price {
    /// What a call with these tokens costs, in nano-USD (rounded to the nearest).
    pub fn cost_nanos(&self, input_tokens: u64, output_tokens: u64) -> i64 {
        // USD per million tokens is nano-USD per thousandth of a token: × 1000 per token.
        let nanos = input_tokens as f64 * self.input_per_million * 1_000.0
            + output_tokens as f64 * self.output_per_million * 1_000.0
            + self.per_call * 1e9;
        nanos.round().min(i64::MAX as f64) as i64
    }
}

/// `[pricing]`: by `PROVIDER/MODEL` (the model may be `*`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pricing {
    prices: BTreeMap<String, Price>,
}

impl Pricing {
    /// `provider/model`'s price, else `provider/*`'s.
    pub fn price(&self, provider: &str, model: &str) -> Option<Price> {
        self.prices
            .get(&format!("{provider}/{model}"))
            .or_else(|| self.prices.get(&format!("{provider}/*")))
            .copied()
    }

    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrice {
    #[serde(default)]
    input_per_million: Option<f64>,
    #[serde(default)]
    output_per_million: Option<f64>,
    #[serde(default)]
    per_call: Option<f64>,
}

/// Checks every entry: a `PROVIDER/MODEL` name, USD amounts from 0 to [`MAX_USD`], at least one.
pub(super) fn check(raw: BTreeMap<String, RawPrice>) -> Result<Pricing, String> {
    let mut prices = BTreeMap::new();
    for (name, raw) in raw {
        let key = format!("pricing.{name:?}");
        let Some((provider, model)) = name.split_once('/') else {
            return Err(format!(
                "{key}: must be named PROVIDER/MODEL (the model may be *)"
            ));
        };
        super::names::check_id(&key, provider)?;
        if model.trim().is_empty() || model.len() > 256 || model.chars().any(char::is_control) {
            return Err(format!(
                "{key}: the model must be 1 to 256 characters, no control characters, or *"
            ));
        }
        if raw.input_per_million.is_none()
            && raw.output_per_million.is_none()
            && raw.per_call.is_none()
        {
            return Err(format!(
                "{key}: must give input_per_million, output_per_million or per_call"
            ));
        }
        let usd = |field: &str, value: Option<f64>| match value {
            None => Ok(0.0),
            Some(v) if v.is_finite() && (0.0..=MAX_USD).contains(&v) => Ok(v),
            Some(_) => Err(format!(
                "{key}.{field}: must be a number of USD from 0 to 1000000"
            )),
        };
        let price = Price {
            input_per_million: usd("input_per_million", raw.input_per_million)?,
            output_per_million: usd("output_per_million", raw.output_per_million)?,
            per_call: usd("per_call", raw.per_call)?,
        };
        prices.insert(name, price);
    }
    Ok(Pricing { prices })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(i: Option<f64>, o: Option<f64>) -> RawPrice {
        RawPrice {
            input_per_million: i,
            output_per_million: o,
            per_call: None,
        }
    }

    #[test]
    fn a_models_price_is_its_own_else_its_providers_star() {
        let pricing = check(BTreeMap::from([
            ("p/m".to_string(), raw(Some(1.0), Some(2.0))),
            ("p/*".to_string(), raw(Some(3.0), None)),
        ]))
        .unwrap();
        assert_eq!(pricing.price("p", "m").unwrap().output_per_million, 2.0);
        assert_eq!(pricing.price("p", "other").unwrap().input_per_million, 3.0);
        assert_eq!(pricing.price("q", "m"), None);
    }

    #[test]
    fn costs_are_exact_nano_usd() {
        let price = Price {
            input_per_million: 2.5,
            output_per_million: 10.0,
            per_call: 0.005,
        };
        // 1000 × 2.5 µUSD + 100 × 10 µUSD + 5 mUSD.
        assert_eq!(
            price.cost_nanos(1_000, 100),
            2_500_000 + 1_000_000 + 5_000_000
        );
        assert_eq!(Price::default().cost_nanos(u64::MAX, u64::MAX), 0);
    }

    #[test]
    fn bad_entries_name_the_key_and_the_rule() {
        let one = |name: &str, price: RawPrice| check(BTreeMap::from([(name.to_string(), price)]));
        assert!(
            one("nomodel", raw(Some(1.0), None))
                .unwrap_err()
                .contains("PROVIDER/MODEL")
        );
        assert!(
            one("p/m", raw(None, None))
                .unwrap_err()
                .contains("must give")
        );
        let negative = one("p/m", raw(Some(-1.0), None)).unwrap_err();
        assert!(negative.contains("input_per_million"), "{negative}");
        assert!(one("p/m", raw(Some(f64::NAN), None)).is_err());
        assert!(one("P Q/m", raw(Some(1.0), None)).is_err());
    }
}
