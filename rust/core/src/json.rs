//! Compact JSON text exactly as orjson 3.x writes it (contract rule 11).

pub use serde_json::{Map, Number, Value};

/// Containers a value may nest, counting itself; kept below orjson's own limit.
pub const MAX_DEPTH: usize = 128;

// 0 means the byte is written as is; otherwise the escape letter, or `u` for \u00xx.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether two short strings (an item's type, a message id: compared on
/// every item of a fast path) are equal: a word or two compared in place,
/// where `==` calls `memcmp` for any length it does not know.
#[inline]
pub fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        // Two overlapping words each way cover every byte.
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        17..=32 => wide(a, 0) == wide(b, 0) && wide(a, n - 16) == wide(b, n - 16),
        _ => a == b,
    }
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_ne_bytes(word)
}

fn wide(bytes: &[u8], at: usize) -> u128 {
    let mut wide = [0; 16];
    wide.copy_from_slice(&bytes[at..at + 16]);
    u128::from_ne_bytes(wide)
}

/// Whether `text` has a byte JSON must escape.
pub fn needs_escape(text: &str) -> bool {
    first_escape(text.as_bytes()).is_some()
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Where the first byte `ESCAPE` marks is: eight bytes a test, then one at a
/// time (tool results and ids are tens of bytes, a byte's table lookup per
/// byte was most of what writing them cost).
fn first_escape(bytes: &[u8]) -> Option<usize> {
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        // A flagged high bit per byte below 0x20, equal to `"` or equal to `\`.
        // A borrow can flag a byte after a true one, never before it, so the
        // lowest flag is a true one.
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let flags = ((word.wrapping_sub(ONES * 0x20) & !word)
            | (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash))
            & HIGHS;
        if flags != 0 {
            return Some(at + (flags.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&byte| ESCAPE[byte as usize] != 0)
        .map(|found| at + found)
}

/// The length of `text` once escaped, quotes included.
pub fn escaped_len(text: &str) -> usize {
    let mut len = text.len() + 2;
    for &byte in text.as_bytes() {
        match ESCAPE[byte as usize] {
            0 => {}
            b'u' => len += 5,
            _ => len += 1,
        }
    }
    len
}

/// Writes `text` as a JSON string, quotes included.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut rest = bytes;
    // Plain runs are copied whole; only the bytes that need it are escaped.
    while let Some(at) = first_escape(rest) {
        out.extend_from_slice(&rest[..at]);
        let byte = rest[at];
        match ESCAPE[byte as usize] {
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(byte >> 4) as usize],
                HEX[(byte & 0xf) as usize],
            ]),
            escape => out.extend_from_slice(&[b'\\', escape]),
        }
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// Writes a name known to need no escaping (the contract's own field and event names).
pub fn write_plain(out: &mut Vec<u8>, name: &str) {
    debug_assert!(!needs_escape(name));
    out.reserve(name.len() + 2);
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.push(b'"');
}

/// Writes a finite float: ryu's shortest digits, with orjson's `+` in positive exponents.
pub fn write_f64(out: &mut Vec<u8>, value: f64) {
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(value).as_bytes();
    match text.iter().position(|&b| b == b'e') {
        Some(at) if text.get(at + 1) != Some(&b'-') => {
            out.extend_from_slice(&text[..=at]);
            out.push(b'+');
            out.extend_from_slice(&text[at + 1..]);
        }
        _ => out.extend_from_slice(text),
    }
}

fn write_number(out: &mut Vec<u8>, number: &Number) {
    if let Some(value) = number.as_u64() {
        let mut buffer = itoa_buffer();
        out.extend_from_slice(format_u64(&mut buffer, value));
    } else if let Some(value) = number.as_i64() {
        if value < 0 {
            out.push(b'-');
        }
        let mut buffer = itoa_buffer();
        out.extend_from_slice(format_u64(&mut buffer, value.unsigned_abs()));
    } else if let Some(value) = number.as_f64() {
        if value.is_finite() {
            write_f64(out, value);
        } else {
            out.extend_from_slice(b"null");
        }
    }
}

/// Appends the decimal digits of `value` (an id's counter).
pub fn push_u64(out: &mut String, value: u64) {
    let mut buffer = itoa_buffer();
    for &digit in format_u64(&mut buffer, value) {
        out.push(char::from(digit));
    }
}

fn itoa_buffer() -> [u8; 20] {
    [0; 20]
}

fn format_u64(buffer: &mut [u8; 20], mut value: u64) -> &[u8] {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    &buffer[at..]
}

/// Writes any value as compact JSON.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_map(out, map),
    }
}

pub fn write_map(out: &mut Vec<u8>, map: &Map<String, Value>) {
    out.push(b'{');
    for (index, (key, item)) in map.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, item);
    }
    out.push(b'}');
}

/// Compact JSON text of a value, as tool-call args and tool results carry it.
pub fn compact(value: &Value) -> String {
    let mut out = Vec::new();
    write_value(&mut out, value);
    // Only valid UTF-8 is ever written: input strings are Rust strings.
    String::from_utf8(out).unwrap_or_default()
}

/// A float as a JSON value: non-finite floats are `null` (rule 11).
pub fn float(value: f64) -> Value {
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_is_equality_at_every_length_and_every_differing_byte() {
        for n in 0..=40 {
            let text: String = "abcdefghijklmnopqrstuvwxyz0123456789é東"
                .chars()
                .take(n)
                .collect();
            assert!(same_text(&text, &text.clone()));
            let bytes = text.as_bytes();
            for at in 0..bytes.len() {
                let mut other = bytes.to_vec();
                other[at] = if other[at] == b'#' { b'$' } else { b'#' };
                // Any byte changed (valid UTF-8 or not, compared as bytes).
                let other = String::from_utf8_lossy(&other).into_owned();
                assert_eq!(same_text(&text, &other), text == other, "{n} {at}");
            }
            assert!(!same_text(&text, &format!("{text}x")));
        }
    }

    #[test]
    fn the_word_scan_finds_what_the_table_marks() {
        let by_table = |bytes: &[u8]| bytes.iter().position(|&b| ESCAPE[b as usize] != 0);
        for byte in 0..=255u8 {
            for len in 1..24 {
                for at in 0..len {
                    // Plain bytes around it, high ones among them (UTF-8 continuations).
                    let mut bytes: Vec<u8> =
                        (0..len).map(|i| [b'a', 0xc3, 0xa9, b'~'][i % 4]).collect();
                    bytes[at] = byte;
                    assert_eq!(
                        first_escape(&bytes),
                        by_table(&bytes),
                        "{byte:#x} at {at} of {len}"
                    );
                    // A second marked byte after it changes nothing.
                    if at + 1 < len {
                        bytes[len - 1] = b'"';
                        assert_eq!(first_escape(&bytes), by_table(&bytes));
                    }
                }
            }
        }
    }

    fn f(value: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_match_orjson() {
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-7, "1.5e-7"),
            (1e-5, "0.00001"),
            (1e-6, "1e-6"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (100.0, "100.0"),
            (1.234_567_890_123_456_8e17, "1.2345678901234568e+17"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.1, "0.1"),
            (123_456_789_012_345.6, "123456789012345.6"),
            (1e22, "1e+22"),
            (-2.5e-9, "-2.5e-9"),
            (9_007_199_254_740_992.0, "9007199254740992.0"),
        ];
        for (value, expected) in cases {
            assert_eq!(f(value), expected, "{value:e}");
        }
    }

    #[test]
    fn strings_escape_only_what_json_needs() {
        let mut out = Vec::new();
        write_str(&mut out, "\u{0}\u{1f}\u{7f}\u{2028}\"\\ é\u{8}\u{c}\n\r\t/");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"\\u0000\\u001f\u{7f}\u{2028}\\\"\\\\ é\\b\\f\\n\\r\\t/\""
        );
        assert_eq!(escaped_len("a\"\u{1}"), 2 + 1 + 2 + 6);
    }

    #[test]
    fn numbers_and_containers() {
        let value: Value = serde_json::from_str(
            r#"{"b":[1,-1,18446744073709551615,-9223372036854775808,1.0,null,true,false],"a":{}}"#,
        )
        .unwrap();
        assert_eq!(
            compact(&value),
            r#"{"b":[1,-1,18446744073709551615,-9223372036854775808,1.0,null,true,false],"a":{}}"#
        );
        assert_eq!(compact(&float(f64::NAN)), "null");
    }
}
