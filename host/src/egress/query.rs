//! Keys in URLs: a service's key as a query parameter (`auth = "query:NAME"`), and any key an
//! upstream copied into a URL (a redirect that keeps the query) kept from every hop. The query is
//! edited pair by pair as text, so the pairs the plugin wrote reach the upstream byte for byte.

use memchr::memmem;
use url::{Url, form_urlencoded};

/// Sets `name` to `value` alone: pairs of that name the plugin wrote are dropped.
pub fn set(url: &mut Url, name: &str, value: &str) {
    edit(url, |k, _| k == name, Some((name, value)));
}

/// Drops every pair whose value holds one of `keys`. Run on every hop before this origin's own
/// credentials are added, so a key reaches only the origin it belongs to.
pub fn drop_keys(url: &mut Url, keys: &[Box<[u8]>]) {
    if keys.is_empty() || url.query().is_none() {
        return;
    }
    edit(
        url,
        |_, v| keys.iter().any(|k| memmem::find(v.as_bytes(), k).is_some()),
        None,
    );
}

/// `url` without the pairs `drop(name, value)` holds for (both decoded), `add` appended; the
/// query is rewritten only when something changes.
fn edit(url: &mut Url, drop: impl Fn(&str, &str) -> bool, add: Option<(&str, &str)>) {
    let query = url.query().unwrap_or("");
    let mut dropped = false;
    let mut kept: Vec<String> = Vec::new();
    for segment in query.split('&').filter(|s| !s.is_empty()) {
        let gone = form_urlencoded::parse(segment.as_bytes())
            .next()
            .is_some_and(|(k, v)| drop(&k, &v));
        dropped |= gone;
        if !gone {
            kept.push(segment.to_string());
        }
    }
    if let Some((name, value)) = add {
        kept.push(format!("{}={}", encode(name), encode(value)));
    } else if !dropped {
        return;
    }
    url.set_query((!kept.is_empty()).then(|| kept.join("&")).as_deref());
}

/// `text` as it stands in a query (`application/x-www-form-urlencoded`).
pub fn encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_set_alone_and_the_rest_is_left_as_written() {
        let mut url = Url::parse("http://h/p?a=x%20y&key=guess&flag&key=again&b=1+2").unwrap();
        set(&mut url, "key", "k+y/=");
        assert_eq!(url.query(), Some("a=x%20y&flag&b=1+2&key=k%2By%2F%3D"));
        let mut bare = Url::parse("http://h/p").unwrap();
        set(&mut bare, "key", "k");
        assert_eq!(bare.as_str(), "http://h/p?key=k");
    }

    #[test]
    fn pairs_holding_a_key_are_dropped_wherever_they_are() {
        let keys: Vec<Box<[u8]>> = vec![b"sk-secret-123".as_slice().into()];
        let mut url = Url::parse(
            "http://other/landing?next=%2Fx%3Fkey%3Dsk-secret-123&keep=1&k=sk-secret-123",
        )
        .unwrap();
        drop_keys(&mut url, &keys);
        assert_eq!(url.query(), Some("keep=1"));
        let mut untouched = Url::parse("http://h/p?a=x%20y&flag").unwrap();
        drop_keys(&mut untouched, &keys);
        assert_eq!(untouched.query(), Some("a=x%20y&flag"));
        let mut emptied = Url::parse("http://h/p?k=sk-secret-123").unwrap();
        drop_keys(&mut emptied, &keys);
        assert_eq!(emptied.as_str(), "http://h/p");
    }
}
