//! A budget: how much a person or a key may spend per UTC day, week (from Monday) or month, in
//! USD or in tokens. Read from a request's `budget` field and from the store's JSON (both
//! `{"usd": N | "tokens": N, "period": "day" | "week" | "month"}`); what it is checked against
//! is `usage/`'s.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde_json::{Value, json};

/// The most USD a budget may hold.
const MAX_USD: f64 = 1e9;
/// The most tokens a budget may hold.
const MAX_TOKENS: u64 = 1_000_000_000_000_000;

/// What a budget counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// USD, counted in nano-USD.
    Usd,
    /// Input and output tokens.
    Tokens,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    Day,
    Week,
    Month,
}

/// A budget, its limit in its measure's unit (nano-USD or tokens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub measure: Measure,
    pub limit: i64,
    pub period: Period,
}

impl Period {
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// The start of the period `at` is in, and the start of the next.
    pub fn window(self, at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        let day = at.date_naive();
        let start = match self {
            Period::Day => day,
            Period::Week => day - Duration::days(i64::from(day.weekday().num_days_from_monday())),
            Period::Month => day.with_day(1).expect("every month has a first day"),
        };
        let next = match self {
            Period::Day => start + Duration::days(1),
            Period::Week => start + Duration::days(7),
            Period::Month => {
                let (y, m) = if start.month() == 12 {
                    (start.year() + 1, 1)
                } else {
                    (start.year(), start.month() + 1)
                };
                NaiveDate::from_ymd_opt(y, m, 1).expect("a month's first day")
            }
        };
        let midnight =
            |d: NaiveDate| Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight"));
        (midnight(start), midnight(next))
    }
}

impl Budget {
    /// The JSON the API shows and the store keeps.
    pub fn to_json(&self) -> Value {
        match self.measure {
            Measure::Usd => json!({"usd": usd(self.limit), "period": self.period.as_str()}),
            Measure::Tokens => json!({"tokens": self.limit, "period": self.period.as_str()}),
        }
    }

    /// A request's `field` (`budget`): the object, or `null` for none. The error names the
    /// field and the rule.
    pub fn parse(field: &str, value: &Value) -> Result<Option<Budget>, String> {
        let Some(object) = value.as_object() else {
            return match value {
                Value::Null => Ok(None),
                _ => Err(format!(
                    "{field}: must be an object {{usd | tokens, period}} or null"
                )),
            };
        };
        if let Some(other) = object
            .keys()
            .find(|k| !matches!(k.as_str(), "usd" | "tokens" | "period"))
        {
            return Err(format!(
                "{field}.{other}: not a budget field (usd, tokens, period)"
            ));
        }
        let period = match object.get("period").and_then(Value::as_str) {
            Some("day") => Period::Day,
            Some("week") => Period::Week,
            Some("month") => Period::Month,
            _ => return Err(format!("{field}.period: must be day, week or month")),
        };
        let (measure, limit) = match (object.get("usd"), object.get("tokens")) {
            (Some(usd), None) => match usd.as_f64() {
                // At least a nano-dollar, the ledger's unit.
                Some(v) if v.is_finite() && (1e-9..=MAX_USD).contains(&v) => {
                    (Measure::Usd, (v * 1e9).round() as i64)
                }
                _ => {
                    return Err(format!(
                        "{field}.usd: must be a number of USD from 0.000000001 to 1000000000"
                    ));
                }
            },
            (None, Some(tokens)) => match tokens.as_u64() {
                Some(n) if (1..=MAX_TOKENS).contains(&n) => (Measure::Tokens, n as i64),
                _ => {
                    return Err(format!(
                        "{field}.tokens: must be a whole number from 1 to {MAX_TOKENS}"
                    ));
                }
            },
            _ => return Err(format!("{field}: must give exactly one of usd and tokens")),
        };
        Ok(Some(Budget {
            measure,
            limit,
            period,
        }))
    }

    /// A stored budget (the store's JSON text).
    pub fn stored(text: Option<&str>) -> Option<Budget> {
        let value: Value = serde_json::from_str(text?).ok()?;
        Budget::parse("budget", &value).ok().flatten()
    }
}

/// Nano-USD as USD.
pub fn usd(nanos: i64) -> f64 {
    nanos as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn periods_are_utc_days_weeks_from_monday_and_months() {
        let t = at("2026-12-31T23:59:59Z"); // a Thursday
        assert_eq!(
            Period::Day.window(t),
            (at("2026-12-31T00:00:00Z"), at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(
            Period::Week.window(t),
            (at("2026-12-28T00:00:00Z"), at("2027-01-04T00:00:00Z"))
        );
        assert_eq!(
            Period::Month.window(t),
            (at("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(
            Period::Month.window(at("2027-02-10T00:00:00Z")).1,
            at("2027-03-01T00:00:00Z")
        );
    }

    #[test]
    fn a_budget_is_usd_or_tokens_per_period() {
        let usd = Budget::parse("budget", &json!({"usd": 2.5, "period": "month"}))
            .unwrap()
            .unwrap();
        assert_eq!((usd.measure, usd.limit), (Measure::Usd, 2_500_000_000));
        assert_eq!(usd.to_json(), json!({"usd": 2.5, "period": "month"}));
        let tokens = Budget::parse("budget", &json!({"tokens": 300, "period": "day"})).unwrap();
        assert_eq!(
            Budget::stored(Some(&tokens.unwrap().to_json().to_string())),
            tokens
        );
        assert_eq!(Budget::parse("budget", &Value::Null), Ok(None));
    }

    #[test]
    fn bad_budgets_name_the_field_and_the_rule() {
        let bad = |v: Value| Budget::parse("budget", &v).unwrap_err();
        assert!(bad(json!({"usd": 1, "tokens": 2, "period": "day"})).contains("exactly one"));
        assert!(bad(json!({"usd": 0, "period": "day"})).starts_with("budget.usd"));
        assert!(bad(json!({"usd": 1e-12, "period": "day"})).starts_with("budget.usd"));
        assert!(bad(json!({"tokens": 1.5, "period": "day"})).starts_with("budget.tokens"));
        assert!(bad(json!({"tokens": 1, "period": "year"})).starts_with("budget.period"));
        assert!(bad(json!({"tokens": 1, "period": "day", "x": 1})).starts_with("budget.x"));
        assert!(bad(json!("5 usd")).contains("object"));
    }
}
