//! Every string value a `Serialize` value holds, visited in place: whether
//! an entry holds a secret is asked of its strings without serializing it
//! (a 100 MB answer would otherwise be copied once more just to be looked
//! at). Map keys are visited too (a secret may be used as a key, and
//! [`super::Redactor::json`] redacts keys); struct field names are the
//! program's own and are not.

use serde::Serialize;
use serde::ser;

/// True when `f` is true of one of `value`'s string values (it stops at the
/// first). A value that fails to serialize counts as holding one: the
/// caller then takes the slow, checked path.
pub fn any_string<T: Serialize + ?Sized>(value: &T, f: &mut dyn FnMut(&str) -> bool) -> bool {
    match value.serialize(&mut Visit { f }) {
        Ok(()) => false,
        Err(Stop::Found) | Err(Stop::Failed) => true,
    }
}

/// Why a visit ended early.
#[derive(Debug, thiserror::Error)]
enum Stop {
    /// `f` was true of a string.
    #[error("found")]
    Found,
    /// The value's own `Serialize` failed.
    #[error("the value could not be serialized")]
    Failed,
}

impl ser::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Stop {
        Stop::Failed
    }
}

struct Visit<'f> {
    f: &'f mut dyn FnMut(&str) -> bool,
}

impl Visit<'_> {
    fn text(&mut self, s: &str) -> Result<(), Stop> {
        if (self.f)(s) { Err(Stop::Found) } else { Ok(()) }
    }
}

/// Scalars other than strings hold no text.
macro_rules! nothing {
    ($($name:ident: $ty:ty),*) => {
        $(fn $name(self, _: $ty) -> Result<(), Stop> { Ok(()) })*
    };
}

impl ser::Serializer for &mut Visit<'_> {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    nothing!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_f32: f32,
        serialize_f64: f64, serialize_bytes: &[u8], serialize_unit_struct: &'static str);

    fn serialize_char(self, c: char) -> Result<(), Stop> {
        self.text(c.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, s: &str) -> Result<(), Stop> {
        self.text(s)
    }
    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Stop> {
        self.text(&value.to_string())
    }
    fn serialize_none(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
}

/// Sequences, tuples and their variants: every element.
macro_rules! elements {
    ($($trait:ident::$method:ident),*) => {
        $(impl ser::$trait for &mut Visit<'_> {
            type Ok = ();
            type Error = Stop;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Stop> {
                Ok(())
            }
        })*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for &mut Visit<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Stop> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

/// Structs and struct variants: every field's value.
macro_rules! fields {
    ($($trait:ident),*) => {
        $(impl ser::$trait for &mut Visit<'_> {
            type Ok = ();
            type Error = Stop;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> Result<(), Stop> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Stop> {
                Ok(())
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(value: &impl Serialize) -> Vec<String> {
        let mut seen = Vec::new();
        any_string(value, &mut |s| {
            seen.push(s.to_string());
            false
        });
        seen
    }

    #[test]
    fn every_string_value_and_map_key_is_visited() {
        let value = json!({"a": "one", "list": [1, "two", {"deep": ["three", null, true]}], "n": 4.5});
        let mut got = strings(&value);
        got.sort();
        assert_eq!(got, ["a", "deep", "list", "n", "one", "three", "two"]);
    }

    #[test]
    fn the_visit_stops_at_the_first_hit() {
        let value = json!(["a", "secret", "c"]);
        let mut seen = 0;
        assert!(any_string(&value, &mut |s| {
            seen += 1;
            s == "secret"
        }));
        assert_eq!(seen, 2);
        assert!(!any_string(&value, &mut |s| s == "nope"));
    }
}
