//! A file's text cut into chunks, the units the search finds and the tool quotes: about
//! [`TARGET`] characters each, never more than [`MAX`], cut between paragraphs where they
//! allow it, else between sentences, else between words; each chunk after a page's first
//! begins with the end of the one before it (about [`OVERLAP`] characters), so a fact that
//! straddles a cut is whole in one of them. A chunk never spans two pages: its page is the one
//! it quotes.

use crate::store::library_search::NewChunk;

/// The size a chunk is filled to, in characters.
pub const TARGET: usize = 1_000;
/// The most characters in a chunk.
pub const MAX: usize = 1_400;
/// About how much of a chunk's end the next one repeats.
pub const OVERLAP: usize = 150;
/// The longest piece (paragraph, sentence, word) kept whole: with the overlap and a separator
/// it still fits in [`MAX`].
const PIECE: usize = MAX - OVERLAP - 50;

/// One page's text (`page` 1-based), or the whole text of a format without pages (`None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageText {
    pub page: Option<u32>,
    pub text: String,
}

/// The chunks of `pages`, in order.
pub fn chunks(pages: &[PageText]) -> Vec<NewChunk> {
    let mut out = Vec::new();
    for page in pages {
        for text in page_chunks(&page.text) {
            out.push(NewChunk {
                page: page.page,
                text,
            });
        }
    }
    out
}

/// The chunks of one page's text.
fn page_chunks(text: &str) -> Vec<String> {
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    // Whether `current` holds more than the overlap it began with.
    let mut fresh = false;
    for (piece, paragraph_start) in pieces(text) {
        let separator = if current.is_empty() {
            ""
        } else if paragraph_start {
            "\n\n"
        } else {
            " "
        };
        let grown = chars(&current) + separator.len() + chars(&piece);
        if fresh && grown > TARGET {
            let overlap = tail(&current, OVERLAP).to_string();
            chunks.push(std::mem::take(&mut current));
            current = overlap;
            let separator = if current.is_empty() { "" } else { " " };
            current.push_str(separator);
        } else {
            current.push_str(separator);
        }
        current.push_str(&piece);
        fresh = true;
    }
    if fresh {
        chunks.push(current);
    }
    chunks
}

/// The text's pieces, each at most [`PIECE`] characters, with whether each begins a paragraph:
/// paragraphs (white space inside folded to one space), long ones cut between lines (a table's
/// rows, a CSV's records), long lines into sentences, long sentences into words, long words
/// into runs of characters.
fn pieces(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for paragraph in text.split("\n\n") {
        let folded = fold(paragraph);
        if folded.is_empty() {
            continue;
        }
        let cut = if chars(&folded) <= PIECE {
            vec![folded]
        } else {
            let lines = paragraph.lines().map(fold).filter(|l| !l.is_empty());
            pack(lines.flat_map(|line| split_to_fit(&line)))
        };
        for (i, piece) in cut.into_iter().enumerate() {
            out.push((piece, i == 0));
        }
    }
    out
}

/// `text` with each run of white space one space, trimmed.
fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` (folded) as pieces of at most [`PIECE`] characters, cut at sentence ends where it can,
/// else at spaces, else anywhere between characters.
fn split_to_fit(text: &str) -> Vec<String> {
    if chars(text) <= PIECE {
        return vec![text.to_string()];
    }
    let sentences = split_after(text, |prev, c| matches!(prev, '.' | '?' | '!') && c == ' ');
    if sentences.len() > 1 {
        return sentences.iter().flat_map(|s| split_to_fit(s)).collect();
    }
    let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
    if words.len() > 1 {
        return pack(words.iter().flat_map(|w| split_to_fit(w)));
    }
    let all: Vec<char> = text.chars().collect();
    all.chunks(PIECE).map(|c| c.iter().collect()).collect()
}

/// `text` cut after each place where `cut(previous char, char)` holds (the char dropped).
fn split_after(text: &str, cut: impl Fn(char, char) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev = '\0';
    for c in text.chars() {
        if cut(prev, c) && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
        prev = c;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Words joined by spaces into pieces of at most [`PIECE`] characters.
fn pack(words: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for word in words {
        if !current.is_empty() && chars(&current) + 1 + chars(&word) > PIECE {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&word);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The end of `text`: at most `n` characters, beginning at a word where there is one.
fn tail(text: &str, n: usize) -> &str {
    let total = chars(text);
    if total <= n {
        return text;
    }
    let start = text
        .char_indices()
        .nth(total - n)
        .map(|(i, _)| i)
        .unwrap_or(0);
    let rest = &text[start..];
    match rest.find(' ') {
        Some(space) if space + 1 < rest.len() => &rest[space + 1..],
        _ => rest,
    }
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> Vec<PageText> {
        vec![PageText {
            page: None,
            text: text.into(),
        }]
    }

    #[test]
    fn a_short_text_is_one_chunk_with_its_white_space_folded() {
        let out = chunks(&page("  Hello\t  world.\n\n\n\nSecond   line. "));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].text, "Hello world.\n\nSecond line.");
        assert!(chunks(&page(" \n\n \t")).is_empty());
    }

    #[test]
    fn long_text_is_cut_near_the_target_never_past_the_max_with_overlap() {
        let sentence = "The quick brown fox jumps over the lazy dog again. ";
        let text: String = (0..20)
            .map(|p| format!("Paragraph {p}. {}\n\n", sentence.repeat(7)))
            .collect();
        let out = chunks(&page(&text));
        assert!(out.len() > 5, "{}", out.len());
        for (i, chunk) in out.iter().enumerate() {
            let n = chars(&chunk.text);
            assert!(n <= MAX, "chunk {i}: {n}");
            assert!(n >= TARGET / 3, "chunk {i}: {n}");
        }
        // Each chunk after the first starts with words the one before ends with.
        for pair in out.windows(2) {
            let head: String = pair[1].text.chars().take(40).collect();
            assert!(pair[0].text.contains(&head), "{head:?}");
        }
        // Every paragraph's number is in some chunk.
        for p in 0..20 {
            assert!(
                out.iter()
                    .any(|c| c.text.contains(&format!("Paragraph {p}.")))
            );
        }
    }

    #[test]
    fn one_huge_word_and_one_huge_sentence_are_cut_too() {
        for text in ["x".repeat(10_000), "word ".repeat(3_000), "é".repeat(5_000)] {
            let out = chunks(&page(&text));
            assert!(out.len() >= 3);
            assert!(out.iter().all(|c| chars(&c.text) <= MAX));
        }
    }

    #[test]
    fn a_long_paragraph_of_lines_is_cut_between_lines() {
        let rows: String = (0..300)
            .map(|i| format!("row {i}, alpha, beta\n"))
            .collect();
        let out = chunks(&page(&rows));
        assert!(out.len() > 3);
        for chunk in &out {
            assert!(chars(&chunk.text) <= MAX);
        }
        // No row is cut in two: each chunk's text ends with a whole row.
        for chunk in &out {
            assert!(chunk.text.ends_with("alpha, beta"), "{:?}", chunk.text);
        }
    }

    #[test]
    fn a_chunk_keeps_its_page_and_never_spans_two() {
        let pages = [
            PageText {
                page: Some(1),
                text: "one ".repeat(400),
            },
            PageText {
                page: Some(2),
                text: "two".into(),
            },
        ];
        let out = chunks(&pages);
        let last = out.last().unwrap();
        assert_eq!((last.page, last.text.as_str()), (Some(2), "two"));
        assert!(out[..out.len() - 1].iter().all(|c| c.page == Some(1)));
    }
}
