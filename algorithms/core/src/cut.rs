//! Text cut to a number of characters for a person to read (a log line, a parameter value in
//! a table, a list in an error), on a character boundary; each caller says in its own words
//! what was left out.

/// The first `max` characters of `text`, or `None` when it has no more than `max`.
pub fn first_chars(text: &str, max: usize) -> Option<&str> {
    text.char_indices().nth(max).map(|(end, _)| &text[..end])
}

#[cfg(test)]
mod tests {
    use super::first_chars;

    #[test]
    fn cuts_on_character_boundaries_and_only_longer_text() {
        assert_eq!(first_chars("abc", 3), None);
        assert_eq!(first_chars("abcd", 3), Some("abc"));
        assert_eq!(first_chars("ééé🙂", 2), Some("éé"));
        assert_eq!(first_chars("", 0), None);
        assert_eq!(first_chars("a", 0), Some(""));
    }
}
