//! A reader for protobuf text format (what Caffe's `.prototxt` files are written in),
//! into a schema-less tree: the converter interprets field names itself, so no
//! `caffe.proto` is needed.

use crate::ImportError;

/// A field's value: a scalar token or a nested message.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A number, an enum identifier or a (unquoted) string.
    Scalar(String),
    Message(Message),
}

/// A message: its fields in order (repeated fields appear several times).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Message {
    pub fields: Vec<(String, Value)>,
}

impl Message {
    /// Every value of a field, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.fields
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v)
    }
    /// The scalar values of a repeated field.
    pub fn scalars<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.all(name).filter_map(|v| match v {
            Value::Scalar(s) => Some(s.as_str()),
            Value::Message(_) => None,
        })
    }
    /// The last scalar value of a field (protobuf's rule for a repeated singular field).
    pub fn scalar<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        self.scalars(name).last()
    }
    /// The last message value of a field.
    pub fn message<'a>(&'a self, name: &'a str) -> Option<&'a Message> {
        self.all(name)
            .filter_map(|v| match v {
                Value::Message(m) => Some(m),
                Value::Scalar(_) => None,
            })
            .last()
    }
    pub fn messages<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Message> + 'a {
        self.all(name).filter_map(|v| match v {
            Value::Message(m) => Some(m),
            Value::Scalar(_) => None,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Colon,
    Open(char),
    Close(char),
    Separator,
}

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, ImportError> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut line = 1;
    while let Some((_, c)) = chars.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '#' => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            ':' => tokens.push((Token::Colon, line)),
            '{' | '<' => tokens.push((Token::Open(c), line)),
            '}' | '>' => tokens.push((Token::Close(c), line)),
            ';' | ',' => tokens.push((Token::Separator, line)),
            '"' | '\'' => {
                let quote = c;
                let mut s = String::new();
                let mut closed = false;
                while let Some((_, c)) = chars.next() {
                    match c {
                        c if c == quote => {
                            closed = true;
                            break;
                        }
                        '\\' => {
                            if let Some((_, e)) = chars.next() {
                                s.push(match e {
                                    'n' => '\n',
                                    't' => '\t',
                                    other => other,
                                });
                            }
                        }
                        '\n' => {
                            line += 1;
                            s.push('\n');
                        }
                        c => s.push(c),
                    }
                }
                if !closed {
                    return Err(ImportError::Syntax {
                        line,
                        message: "unterminated string".into(),
                    });
                }
                tokens.push((Token::Str(s), line));
            }
            c if c.is_alphanumeric() || "_-+.".contains(c) => {
                let mut s = c.to_string();
                while let Some(&(_, n)) = chars.peek() {
                    if n.is_alphanumeric() || "_-+.".contains(n) {
                        s.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push((Token::Ident(s), line));
            }
            other => {
                return Err(ImportError::Syntax {
                    line,
                    message: format!("unexpected character {other:?}"),
                })
            }
        }
    }
    Ok(tokens)
}

/// Messages nested deeper than this are refused (Caffe files nest 3 or 4 levels), so a
/// small hostile file cannot exhaust the stack.
pub const MAX_NESTING: usize = 64;
/// Larger text is refused before parsing (the largest real deploy files are well under
/// a megabyte).
pub const MAX_TEXT_BYTES: usize = 64 << 20;

/// Parses a whole text-format document into its top-level message.
pub fn parse(text: &str) -> Result<Message, ImportError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(ImportError::Unsupported(format!(
            "the file has {} bytes; prototxt files over {} MiB are refused",
            text.len(),
            MAX_TEXT_BYTES >> 20
        )));
    }
    let tokens = tokenize(text)?;
    let mut pos = 0;
    let message = parse_fields(&tokens, &mut pos, None, 0)?;
    Ok(message)
}

fn parse_fields(
    tokens: &[(Token, usize)],
    pos: &mut usize,
    closing: Option<(char, usize)>,
    depth: usize,
) -> Result<Message, ImportError> {
    if depth > MAX_NESTING {
        return Err(ImportError::Syntax {
            line: closing.map_or(1, |(_, line)| line),
            message: format!("messages nested more than {MAX_NESTING} deep"),
        });
    }
    let mut message = Message::default();
    loop {
        let Some((token, line)) = tokens.get(*pos) else {
            return match closing {
                None => Ok(message),
                Some((_, open_line)) => Err(ImportError::Syntax {
                    line: open_line,
                    message: "the message opened here is never closed (truncated file?)".into(),
                }),
            };
        };
        *pos += 1;
        match token {
            Token::Separator => continue,
            Token::Close(c) => {
                let expected = match closing {
                    Some(('{', _)) => '}',
                    Some(('<', _)) => '>',
                    _ => {
                        return Err(ImportError::Syntax {
                            line: *line,
                            message: format!("unexpected '{c}'"),
                        })
                    }
                };
                if *c != expected {
                    return Err(ImportError::Syntax {
                        line: *line,
                        message: format!("expected '{expected}', found '{c}'"),
                    });
                }
                return Ok(message);
            }
            Token::Ident(name) => {
                let mut next = tokens.get(*pos).map(|(t, _)| t);
                let had_colon = next == Some(&Token::Colon);
                if had_colon {
                    *pos += 1;
                    next = tokens.get(*pos).map(|(t, _)| t);
                }
                match next {
                    Some(Token::Open(c)) => {
                        let open = (*c, tokens[*pos].1);
                        *pos += 1;
                        let inner = parse_fields(tokens, pos, Some(open), depth + 1)?;
                        message.fields.push((name.clone(), Value::Message(inner)));
                    }
                    Some(Token::Ident(v)) | Some(Token::Str(v)) if had_colon => {
                        let mut value = v.clone();
                        *pos += 1;
                        // Adjacent strings concatenate.
                        while let Some((Token::Str(more), _)) = tokens.get(*pos) {
                            value.push_str(more);
                            *pos += 1;
                        }
                        message.fields.push((name.clone(), Value::Scalar(value)));
                    }
                    _ => {
                        return Err(ImportError::Syntax {
                            line: *line,
                            message: format!("field \"{name}\" has no value"),
                        })
                    }
                }
            }
            other => {
                return Err(ImportError::Syntax {
                    line: *line,
                    message: format!("expected a field name, found {other:?}"),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_repeated_and_commented_fields() {
        let m = parse(
            "name: \"net\" # a comment\n layer { name: 'c' type: \"Convolution\"\n convolution_param { kernel_size: 3 kernel_size: 5 } }\n layer < name: \"r\" >\n input_dim: 1 input_dim: 3",
        )
        .unwrap();
        assert_eq!(m.scalar("name"), Some("net"));
        let layers: Vec<&Message> = m.messages("layer").collect();
        assert_eq!(layers.len(), 2);
        let conv = layers[0].message("convolution_param").unwrap();
        assert_eq!(conv.scalars("kernel_size").collect::<Vec<_>>(), ["3", "5"]);
        assert_eq!(layers[1].scalar("name"), Some("r"));
        assert_eq!(m.scalars("input_dim").collect::<Vec<_>>(), ["1", "3"]);
    }

    #[test]
    fn truncated_and_malformed_text_is_an_error_with_a_line() {
        let err = parse("layer {\n name: \"x\"\n").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        assert!(err.to_string().contains("never closed"), "{err}");
        let err = parse("layer { name: }").unwrap_err();
        assert!(err.to_string().contains("has no value"), "{err}");
        assert!(parse("a: \"unterminated").is_err());
        assert!(parse("}").is_err());
        assert!(parse("layer { a: 1 >").is_err());
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = "a {".repeat(100_000);
        let err = parse(&deep).unwrap_err();
        assert!(err.to_string().contains("nested more than"), "{err}");
    }
}
