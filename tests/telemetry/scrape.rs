//! `GET /metrics` read as a scraper reads it: parsed by an OpenMetrics parser (a text that does
//! not parse fails the test), then looked up by family and labels.

use openmetrics_parser::{MetricsExposition, OpenMetricsType, OpenMetricsValue};

pub struct Scrape {
    pub text: String,
    exposition: MetricsExposition<OpenMetricsType, OpenMetricsValue>,
}

impl Scrape {
    pub async fn of(base: &str) -> Self {
        let response = reqwest::get(format!("{base}/metrics")).await.unwrap();
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert!(
            content_type.starts_with("application/openmetrics-text"),
            "{content_type}"
        );
        let text = response.text().await.unwrap();
        let exposition = openmetrics_parser::openmetrics::parse_openmetrics(&text)
            .unwrap_or_else(|e| panic!("the metrics parse: {e}\n{text}"));
        Self { text, exposition }
    }

    fn samples<'a>(
        &'a self,
        family: &str,
        labels: &'a [(&str, &str)],
    ) -> impl Iterator<Item = &'a OpenMetricsValue> + 'a {
        // A family with no samples yet is left out of the text: it reads as zero (each family
        // a test expects at zero is seen counting in another test).
        self.exposition
            .families
            .get(family)
            .into_iter()
            .flat_map(|family| family.iter_samples())
            .filter(move |sample| {
                let set = sample.get_labelset().unwrap();
                labels
                    .iter()
                    .all(|(name, value)| set.get_label_value(name) == Some(*value))
            })
            .map(|sample| &sample.value)
    }

    /// The sum of a counter's or gauge's samples with these labels (0 when there are none).
    pub fn value(&self, family: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples(family, labels)
            .map(|value| match value {
                OpenMetricsValue::Counter(c) => c.value.as_f64(),
                OpenMetricsValue::Gauge(g) => g.as_f64(),
                other => panic!("{family} is not a counter or gauge: {other:?}"),
            })
            .sum()
    }

    /// How many observations a histogram's samples with these labels hold.
    pub fn count(&self, family: &str, labels: &[(&str, &str)]) -> u64 {
        self.samples(family, labels)
            .map(|value| match value {
                OpenMetricsValue::Histogram(h) => h.count.unwrap_or(0),
                other => panic!("{family} is not a histogram: {other:?}"),
            })
            .sum()
    }

    /// Every label value of every sample.
    pub fn label_values(&self) -> Vec<String> {
        self.exposition
            .families
            .values()
            .flat_map(|family| {
                family.iter_samples().flat_map(|sample| {
                    let set = sample.get_labelset().unwrap();
                    set.iter_values().cloned().collect::<Vec<_>>()
                })
            })
            .collect()
    }
}
