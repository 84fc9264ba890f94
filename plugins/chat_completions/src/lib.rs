//! The OpenAI-compatible chat completions wire format. (Being written.)
