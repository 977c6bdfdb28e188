//! Small formatting helpers shared by the exporters.

use std::cmp::Ordering;

/// Milliseconds with two decimals, from seconds.
pub fn ms(seconds: f64) -> String {
    format!("{:.2}", seconds * 1000.0)
}

/// A ratio such as `1.42x`.
pub fn times(r: f64) -> String {
    format!("{r:.2}x")
}

/// Orders names the way people do: `resnet-18` before `resnet-101`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let na = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let nb = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (da, db) = (trim_zeros(&a[..na]), trim_zeros(&b[..nb]));
                let ord = da.len().cmp(&db.len()).then_with(|| da.cmp(db));
                if ord != Ordering::Equal {
                    return ord;
                }
                a = &a[na..];
                b = &b[nb..];
            }
            (Some(x), Some(y)) => {
                let ord = x.to_ascii_lowercase().cmp(&y.to_ascii_lowercase());
                if ord != Ordering::Equal {
                    return ord;
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let i = d.iter().take_while(|&&c| c == b'0').count();
    &d[i.min(d.len().saturating_sub(1))..]
}

/// A file-name-safe form of a name.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v = vec![
            "resnet-101",
            "resnet-18",
            "alexnet",
            "resnet-50",
            "vgg16",
            "resnet-152",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "alexnet",
                "resnet-18",
                "resnet-50",
                "resnet-101",
                "resnet-152",
                "vgg16"
            ]
        );
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("GTX 1080 Ti · torch7"), "gtx-1080-ti-torch7");
        assert_eq!(slug("resnet50"), "resnet50");
    }

    #[test]
    fn milliseconds_round_like_printf() {
        assert_eq!(ms(0.101_214), "101.21");
        assert_eq!(ms(0.0139), "13.90");
    }
}
