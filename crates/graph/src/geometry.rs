//! Small value types for 2-D geometry (kernel sizes, strides, paddings) and tensor shapes.
//!
//! They serialise compactly so that hand-written model files stay short: a square kernel is
//! `3`, a rectangular one `[1, 7]`; a symmetric padding `1` or `[1, 2]`, an asymmetric one
//! `[top, left, bottom, right]`.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A height/width pair (kernel size, stride, dilation, output size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hw {
    pub h: usize,
    pub w: usize,
}

impl Hw {
    pub const fn new(h: usize, w: usize) -> Self {
        Self { h, w }
    }
    pub const fn square(n: usize) -> Self {
        Self { h: n, w: n }
    }
    pub fn as_array(self) -> [usize; 2] {
        [self.h, self.w]
    }
}

impl From<usize> for Hw {
    fn from(n: usize) -> Self {
        Self::square(n)
    }
}

impl From<[usize; 2]> for Hw {
    fn from([h, w]: [usize; 2]) -> Self {
        Self { h, w }
    }
}

impl fmt::Display for Hw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.h == self.w {
            write!(f, "{}", self.h)
        } else {
            write!(f, "{}×{}", self.h, self.w)
        }
    }
}

impl Serialize for Hw {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.h == self.w {
            s.serialize_u64(self.h as u64)
        } else {
            [self.h, self.w].serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for Hw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let values = d.deserialize_any(IntsVisitor("an integer or [height, width]"))?;
        match values.as_slice() {
            [n] => Ok(Hw::square(*n)),
            [h, w] => Ok(Hw::new(*h, *w)),
            other => Err(de::Error::invalid_length(
                other.len(),
                &"an integer or [height, width]",
            )),
        }
    }
}

/// Zero padding on each side of a feature map. Asymmetric padding exists in imported
/// models (ONNX `pads`, TensorFlow-style "same"), so all four sides are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Pad2d {
    pub top: usize,
    pub left: usize,
    pub bottom: usize,
    pub right: usize,
}

impl Pad2d {
    pub const fn same(n: usize) -> Self {
        Self {
            top: n,
            left: n,
            bottom: n,
            right: n,
        }
    }
    pub const fn hw(h: usize, w: usize) -> Self {
        Self {
            top: h,
            left: w,
            bottom: h,
            right: w,
        }
    }
    pub fn is_symmetric(&self) -> bool {
        self.top == self.bottom && self.left == self.right
    }
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl From<usize> for Pad2d {
    fn from(n: usize) -> Self {
        Self::same(n)
    }
}

impl From<[usize; 2]> for Pad2d {
    fn from([h, w]: [usize; 2]) -> Self {
        Self::hw(h, w)
    }
}

impl fmt::Display for Pad2d {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_symmetric() {
            write!(f, "{}", Hw::new(self.top, self.left))
        } else {
            write!(
                f,
                "[{}, {}, {}, {}]",
                self.top, self.left, self.bottom, self.right
            )
        }
    }
}

impl Serialize for Pad2d {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_symmetric() {
            Hw::new(self.top, self.left).serialize(s)
        } else {
            let mut seq = s.serialize_seq(Some(4))?;
            for v in [self.top, self.left, self.bottom, self.right] {
                seq.serialize_element(&v)?;
            }
            seq.end()
        }
    }
}

impl<'de> Deserialize<'de> for Pad2d {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = "an integer, [height, width] or [top, left, bottom, right]";
        let values = d.deserialize_any(IntsVisitor(EXPECTED))?;
        match values.as_slice() {
            [n] => Ok(Pad2d::same(*n)),
            [h, w] => Ok(Pad2d::hw(*h, *w)),
            [top, left, bottom, right] => Ok(Pad2d {
                top: *top,
                left: *left,
                bottom: *bottom,
                right: *right,
            }),
            other => Err(de::Error::invalid_length(other.len(), &EXPECTED)),
        }
    }
}

/// Accepts a non-negative integer or an array of them.
struct IntsVisitor(&'static str);

impl<'de> Visitor<'de> for IntsVisitor {
    type Value = Vec<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        usize::try_from(v)
            .map(|v| vec![v])
            .map_err(|_| E::custom("value too large"))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        usize::try_from(v)
            .map(|v| vec![v])
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<usize>()? {
            out.push(v);
        }
        Ok(out)
    }
}

/// The shape of one example flowing along an edge, without the batch dimension:
/// `[C, H, W]` for feature maps, `[F]` for flat vectors.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    pub fn chw(c: usize, h: usize, w: usize) -> Self {
        Self(vec![c, h, w])
    }
    pub fn flat(n: usize) -> Self {
        Self(vec![n])
    }
    /// Number of elements per example.
    pub fn elements(&self) -> u64 {
        self.0
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d as u64))
    }
    /// `(C, H, W)` when this is a feature map.
    pub fn as_chw(&self) -> Option<(usize, usize, usize)> {
        match self.0.as_slice() {
            [c, h, w] => Some((*c, *h, *w)),
            _ => None,
        }
    }
    /// `F` when this is a flat vector.
    pub fn as_flat(&self) -> Option<usize> {
        match self.0.as_slice() {
            [f] => Some(*f),
            _ => None,
        }
    }
    pub fn rank(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|d| d.to_string()).collect();
        write!(f, "{}", parts.join("×"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hw_serialises_compactly_and_reads_both_forms() {
        assert_eq!(serde_json::to_string(&Hw::square(3)).unwrap(), "3");
        assert_eq!(serde_json::to_string(&Hw::new(1, 7)).unwrap(), "[1,7]");
        assert_eq!(serde_json::from_str::<Hw>("5").unwrap(), Hw::square(5));
        assert_eq!(serde_json::from_str::<Hw>("[2,3]").unwrap(), Hw::new(2, 3));
        assert!(serde_json::from_str::<Hw>("[1,2,3]").is_err());
        assert!(serde_json::from_str::<Hw>("-1").is_err());
    }

    #[test]
    fn padding_round_trips_all_forms() {
        for p in [
            Pad2d::same(0),
            Pad2d::same(3),
            Pad2d::hw(0, 3),
            Pad2d {
                top: 0,
                left: 0,
                bottom: 1,
                right: 1,
            },
        ] {
            let s = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Pad2d>(&s).unwrap(), p, "{s}");
        }
        assert_eq!(
            serde_json::from_str::<Pad2d>("[1,2,3,4]").unwrap(),
            Pad2d {
                top: 1,
                left: 2,
                bottom: 3,
                right: 4
            }
        );
        assert!(serde_json::from_str::<Pad2d>("[1,2,3]").is_err());
    }

    #[test]
    fn shape_display_and_elements() {
        let s = Shape::chw(64, 56, 56);
        assert_eq!(s.to_string(), "64×56×56");
        assert_eq!(s.elements(), 64 * 56 * 56);
        assert_eq!(Shape::flat(10).as_flat(), Some(10));
    }
}
