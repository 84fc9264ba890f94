//! The recorded upstream bodies (`tests/fixtures/upstream/`, see SOURCES.md and FORMATS.md there)
//! and the small edits the scenarios make to them: a stream cut inside an event, a stream with
//! an event added or left out. Edits work on whole SSE events (`…\n\n` blocks), so what remains
//! is still the recorded bytes.

/// A recording, by its path under `tests/fixtures/upstream/`.
macro_rules! recording {
    ($path:literal) => {
        include_str!(concat!("../fixtures/upstream/", $path))
    };
}
pub(crate) use recording;

pub const MODELS_LIST: &str = recording!("models_list/openai_list_models.response.json");

/// The events of an SSE body, each with its blank-line terminator.
fn events(sse: &str) -> impl Iterator<Item = &str> {
    sse.split_inclusive("\n\n")
}

/// The first event (`event:`/`data:` block with its blank line) whose text contains `marker`.
pub fn event_with<'a>(sse: &'a str, marker: &str) -> &'a str {
    events(sse)
        .find(|event| event.contains(marker))
        .unwrap_or_else(|| panic!("no event contains {marker:?}"))
}

/// The stream up to (not including) the first event that contains `marker`: every event before
/// it, whole.
pub fn before_event_with<'a>(sse: &'a str, marker: &str) -> &'a str {
    let event = event_with(sse, marker);
    let start = event.as_ptr() as usize - sse.as_ptr() as usize;
    &sse[..start]
}

/// The stream cut in the middle of the event that contains `marker` (at the marker): the events
/// before it are whole, that one is left without its end, as a dropped connection leaves it.
pub fn cut_inside<'a>(sse: &'a str, marker: &str) -> &'a str {
    let at = sse
        .find(marker)
        .unwrap_or_else(|| panic!("the stream does not contain {marker:?}"));
    &sse[..at]
}

/// The stream without its events that contain `marker`.
pub fn without_events_with(sse: &str, marker: &str) -> String {
    events(sse)
        .filter(|event| !event.contains(marker))
        .collect()
}

/// The stream with `extra` (whole events) inserted before the first event that contains
/// `marker`.
pub fn insert_before(sse: &str, marker: &str, extra: &str) -> String {
    let before = before_event_with(sse, marker);
    format!("{before}{extra}{}", &sse[before.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SSE: &str = "event: a\ndata: 1\n\nevent: b\ndata: 2\n\nevent: c\ndata: 3\n\n";

    #[test]
    fn edits_keep_whole_events() {
        assert_eq!(event_with(SSE, "data: 2"), "event: b\ndata: 2\n\n");
        assert_eq!(before_event_with(SSE, "data: 2"), "event: a\ndata: 1\n\n");
        assert_eq!(
            cut_inside(SSE, "2\n"),
            "event: a\ndata: 1\n\nevent: b\ndata: "
        );
        assert_eq!(
            without_events_with(SSE, "event: b"),
            "event: a\ndata: 1\n\nevent: c\ndata: 3\n\n"
        );
        assert_eq!(
            insert_before(SSE, "event: c", "event: x\ndata: 9\n\n"),
            "event: a\ndata: 1\n\nevent: b\ndata: 2\n\nevent: x\ndata: 9\n\nevent: c\ndata: 3\n\n"
        );
    }
}
