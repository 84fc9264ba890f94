//! What the model reads, and the one-line summary the UI shows.

use crate::Found;

/// The longest snippet kept per result, in characters.
const MAX_SNIPPET_CHARS: usize = 1_200;

pub fn for_model(query: &str, found: &Found) -> String {
    let mut out = String::new();
    if found.hits.is_empty() && found.answers.is_empty() {
        out.push_str(&format!("No results for \"{query}\"."));
    } else {
        out.push_str(&format!(
            "Web search results for \"{query}\" ({} result{}):\n",
            found.hits.len(),
            if found.hits.len() == 1 { "" } else { "s" }
        ));
    }
    if !found.answers.is_empty() {
        out.push_str("\nDirect answers:\n");
        for answer in &found.answers {
            out.push_str(&format!("- {}\n", cut(answer)));
        }
    }
    for (i, hit) in found.hits.iter().enumerate() {
        out.push_str(&format!(
            "\n{}. {}\n   URL: {}\n",
            i + 1,
            hit.title,
            hit.url
        ));
        let byline: Vec<String> = [
            hit.published.as_ref().map(|d| format!("Published: {d}")),
            hit.author.as_ref().map(|a| format!("Author: {a}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !byline.is_empty() {
            out.push_str(&format!("   {}\n", byline.join(" · ")));
        }
        if !hit.snippet.is_empty() {
            out.push_str(&format!(
                "   {}\n",
                cut(&hit.snippet).replace('\n', "\n   ")
            ));
        }
    }
    for note in &found.notes {
        out.push_str(&format!("\nNote: {note}\n"));
    }
    out.trim_end().to_string()
}

pub fn summary(query: &str, found: &Found) -> String {
    match found.hits.len() {
        1 => format!("1 result for \"{query}\""),
        n => format!("{n} results for \"{query}\""),
    }
}

fn cut(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= MAX_SNIPPET_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX_SNIPPET_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hit;

    #[test]
    fn results_are_numbered_with_their_details() {
        let found = Found {
            hits: vec![
                Hit {
                    title: "One".into(),
                    url: "https://one.example/".into(),
                    published: Some("2026-01-02".into()),
                    author: Some("Ann".into()),
                    snippet: "First\nsnippet".into(),
                },
                Hit {
                    title: "Two".into(),
                    url: "https://two.example/".into(),
                    snippet: "x".repeat(2_000),
                    ..Hit::default()
                },
            ],
            answers: vec!["42".into()],
            notes: vec!["engines that did not answer: g: timeout".into()],
        };
        let text = for_model("q", &found);
        assert!(
            text.starts_with(
                "Web search results for \"q\" (2 results):\n\nDirect answers:\n- 42\n"
            )
        );
        assert!(text.contains("\n1. One\n   URL: https://one.example/\n   Published: 2026-01-02 · Author: Ann\n   First\n   snippet\n"));
        assert!(text.contains(&format!("   {}…", "x".repeat(1_200))));
        assert!(text.ends_with("Note: engines that did not answer: g: timeout"));
        assert_eq!(summary("q", &found), "2 results for \"q\"");
    }

    #[test]
    fn nothing_found_says_so() {
        assert_eq!(
            for_model("zzz", &Found::default()),
            "No results for \"zzz\"."
        );
        assert_eq!(summary("zzz", &Found::default()), "0 results for \"zzz\"");
    }
}
