//! Where a JSON pointer is in a file's text, as a line and a column, so
//! that `sezzlee check` can print both beside every diagnostic's pointer
//! and an owner's editor can jump there. The catalog parses without
//! positions (it keeps values, not text); this reads the text again, only
//! for the files a diagnostic names, only when `check` prints.
//!
//! JSON is scanned here (a pointer's walk over objects and arrays, strings
//! with their escapes); YAML is read as the parser's events with their
//! marks (`yaml-rust2`), so flow and block styles, quoting and multi-line
//! scalars are placed as the YAML parser places them.

use std::collections::{HashMap, HashSet};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// How a catalog file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

impl Syntax {
    /// A `.json` file is JSON; anything else the catalog reads is YAML.
    pub fn of_file(name: &str) -> Syntax {
        if name.ends_with(".json") {
            Syntax::Json
        } else {
            Syntax::Yaml
        }
    }
}

/// 1-based line and column (in characters) of each value `pointers` name
/// in `text`, in one pass over the text; a pointer the text has no value
/// for (or a text that is not in `syntax`) is left out.
pub fn locate_all(
    text: &str,
    syntax: Syntax,
    pointers: &[&str],
) -> HashMap<String, (usize, usize)> {
    let targets: HashMap<Vec<String>, &str> = pointers
        .iter()
        .filter_map(|pointer| Some((segments(pointer)?, *pointer)))
        .collect();
    let mut prefixes: HashSet<Vec<String>> = HashSet::new();
    for path in targets.keys() {
        for end in 0..=path.len() {
            prefixes.insert(path[..end].to_vec());
        }
    }
    let mut found = HashMap::new();
    if syntax == Syntax::Yaml {
        for (path, (line, column)) in locate_yaml(text, &targets) {
            if let Some(pointer) = targets.get(&path) {
                found.insert(pointer.to_string(), (line, column));
            }
        }
        return found;
    }
    let lines = Lines::of(text);
    let mut json = Json::new(text);
    let mut path = Vec::new();
    let mut offsets = Vec::new();
    json.walk(&mut path, None, &prefixes, &targets, &mut offsets);
    for (pointer, offset) in offsets {
        found.insert(pointer, lines.place(text, offset));
    }
    found
}

/// Line and column of one pointer (see [`locate_all`]).
#[cfg(test)]
fn locate(text: &str, syntax: Syntax, pointer: &str) -> Option<(usize, usize)> {
    locate_all(text, syntax, &[pointer]).remove(pointer)
}

/// A pointer's unescaped segments (`~1` is `/`, `~0` is `~`).
fn segments(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    Some(
        pointer
            .strip_prefix('/')?
            .split('/')
            .map(|raw| raw.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// Where each line of a text starts, to place many offsets quickly.
struct Lines(Vec<usize>);

impl Lines {
    fn of(text: &str) -> Lines {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        Lines(starts)
    }

    fn place(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.0.partition_point(|start| *start <= offset);
        let start = self.0[line.saturating_sub(1)];
        let column = text.get(start..offset).map_or(0, |s| s.chars().count());
        (line, column + 1)
    }
}

/// A JSON text walked by byte offset.
struct Json<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
}

impl<'t> Json<'t> {
    fn new(text: &'t str) -> Self {
        Json {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Walks the value that starts here (at `path`): records where it is
    /// when a pointer names it (an object's member at its key, `key_at`,
    /// as YAML members are), descends only into members on the way to
    /// one, and skips the rest.
    fn walk(
        &mut self,
        path: &mut Vec<String>,
        key_at: Option<usize>,
        prefixes: &HashSet<Vec<String>>,
        targets: &HashMap<Vec<String>, &str>,
        found: &mut Vec<(String, usize)>,
    ) -> Option<()> {
        self.blank();
        if let Some(pointer) = targets.get(path.as_slice()) {
            found.push((pointer.to_string(), key_at.unwrap_or(self.at)));
        }
        match self.peek()? {
            b'{' => {
                self.at += 1;
                loop {
                    self.blank();
                    match self.peek()? {
                        b'}' => {
                            self.at += 1;
                            return Some(());
                        }
                        b',' => {
                            self.at += 1;
                            continue;
                        }
                        b'"' => {}
                        _ => return None,
                    }
                    let key_at = self.at;
                    let key = self.string()?;
                    self.blank();
                    if self.peek()? != b':' {
                        return None;
                    }
                    self.at += 1;
                    path.push(key);
                    if prefixes.contains(path.as_slice()) {
                        self.walk(path, Some(key_at), prefixes, targets, found)?;
                    } else {
                        self.skip()?;
                    }
                    path.pop();
                }
            }
            b'[' => {
                self.at += 1;
                let mut index = 0usize;
                loop {
                    self.blank();
                    match self.peek()? {
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        b',' => {
                            self.at += 1;
                            continue;
                        }
                        _ => {}
                    }
                    path.push(index.to_string());
                    if prefixes.contains(path.as_slice()) {
                        self.walk(path, None, prefixes, targets, found)?;
                    } else {
                        self.skip()?;
                    }
                    path.pop();
                    index += 1;
                }
            }
            _ => self.skip(),
        }
    }

    /// A string's value (the scanner on its opening quote).
    fn string(&mut self) -> Option<String> {
        self.at += 1;
        let mut value = String::new();
        loop {
            let start = self.at;
            while !matches!(self.peek()?, b'"' | b'\\') {
                self.at += 1;
            }
            value.push_str(self.text.get(start..self.at)?);
            if self.peek()? == b'"' {
                self.at += 1;
                return Some(value);
            }
            self.at += 1;
            let escaped = self.peek()?;
            self.at += 1;
            match escaped {
                b'n' => value.push('\n'),
                b't' => value.push('\t'),
                b'r' => value.push('\r'),
                b'b' => value.push('\u{8}'),
                b'f' => value.push('\u{c}'),
                b'u' => {
                    let hex = self.text.get(self.at..self.at + 4)?;
                    self.at += 4;
                    let unit = u32::from_str_radix(hex, 16).ok()?;
                    // Surrogate halves only matter for keys nobody points at.
                    value.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
                }
                other => value.push(char::from(other)),
            }
        }
    }

    /// Past one value of any kind.
    fn skip(&mut self) -> Option<()> {
        self.blank();
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.at += 1;
                }
                b'}' | b']' => {
                    if depth == 0 {
                        return Some(());
                    }
                    depth -= 1;
                    self.at += 1;
                }
                b',' if depth == 0 => return Some(()),
                _ => self.at += 1,
            }
            if depth == 0
                && matches!(
                    self.bytes.get(self.at.wrapping_sub(1)),
                    Some(b'}' | b']' | b'"')
                )
            {
                return Some(());
            }
        }
    }
}

/// Where each YAML node sits on the way to the target.
enum Frame {
    /// A mapping: the next scalar is a key (`None`) or the value of `key`,
    /// read at the mark kept with it.
    Mapping { key: Option<(String, Marker)> },
    /// A sequence and the index of its next item.
    Sequence { next: usize },
}

/// Follows the parser's events, keeping the path to the node being read.
struct YamlWalk<'p> {
    targets: &'p HashMap<Vec<String>, &'p str>,
    stack: Vec<Frame>,
    path: Vec<String>,
    found: Vec<(Vec<String>, Marker)>,
}

impl YamlWalk<'_> {
    /// The path of the node that starts now and where it is placed (a
    /// mapping's member at its key: the parser marks a block value where
    /// its first token ends), or `None` when the node is a key.
    fn node_path(&mut self, mark: Marker) -> Option<(Vec<String>, Marker)> {
        let mut path = self.path.clone();
        let mut at = mark;
        match self.stack.last_mut() {
            None => {}
            Some(Frame::Sequence { next }) => {
                path.push(next.to_string());
                *next += 1;
            }
            Some(Frame::Mapping { key }) => {
                let (name, key_mark) = key.take()?;
                path.push(name);
                at = key_mark;
            }
        }
        Some((path, at))
    }
}

impl MarkedEventReceiver for YamlWalk<'_> {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(value, ..) => match self.node_path(mark) {
                Some((path, at)) => {
                    if self.targets.contains_key(&path) {
                        self.found.push((path, at));
                    }
                }
                None => {
                    if let Some(Frame::Mapping { key }) = self.stack.last_mut() {
                        *key = Some((value, mark));
                    }
                }
            },
            Event::Alias(_) => {
                if let Some((path, at)) = self.node_path(mark)
                    && self.targets.contains_key(&path)
                {
                    self.found.push((path, at));
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let (path, at) = self
                    .node_path(mark)
                    .unwrap_or_else(|| (self.path.clone(), mark));
                if self.targets.contains_key(&path) {
                    self.found.push((path.clone(), at));
                }
                self.path = path;
                self.stack.push(match event {
                    Event::MappingStart(..) => Frame::Mapping { key: None },
                    _ => Frame::Sequence { next: 0 },
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                if !self.stack.is_empty() || !self.path.is_empty() {
                    self.path.pop();
                }
            }
            _ => {}
        }
    }
}

fn locate_yaml(
    text: &str,
    targets: &HashMap<Vec<String>, &str>,
) -> Vec<(Vec<String>, (usize, usize))> {
    let mut walk = YamlWalk {
        targets,
        stack: Vec::new(),
        path: Vec::new(),
        found: Vec::new(),
    };
    let mut parser = Parser::new_from_str(text);
    // A text that stops parsing keeps what was found before the error.
    let _ = parser.load(&mut walk, false);
    walk.found
        .into_iter()
        .map(|(path, mark)| (path, (mark.line(), mark.col() + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = "{\n  \"openapi\": \"3.0.3\",\n  \"paths\": {\n    \"/a\": {\"get\": {\"x\": [1, {\"k\\\"q\": true}]}},\n    \"/b/{id}\": {\n      \"get\": {}\n    }\n  }\n}\n";

    #[test]
    fn json_pointers_are_placed_on_their_values() {
        // A member at its key, an array item at its value.
        assert_eq!(locate(JSON, Syntax::Json, "/openapi"), Some((2, 3)));
        assert_eq!(locate(JSON, Syntax::Json, "/paths/~1a/get"), Some((4, 12)));
        assert_eq!(
            locate(JSON, Syntax::Json, "/paths/~1a/get/x/1"),
            Some((4, 29))
        );
        assert_eq!(
            locate(JSON, Syntax::Json, "/paths/~1a/get/x/1/k\"q"),
            Some((4, 30))
        );
        assert_eq!(
            locate(JSON, Syntax::Json, "/paths/~1b~1{id}/get"),
            Some((6, 7))
        );
        assert_eq!(locate(JSON, Syntax::Json, "/paths/~1c"), None);
        assert_eq!(locate(JSON, Syntax::Json, ""), Some((1, 1)));
        let both = locate_all(
            JSON,
            Syntax::Json,
            &["/openapi", "/paths/~1b~1{id}/get", "/nowhere"],
        );
        assert_eq!(both.len(), 2, "{both:?}");
    }

    const YAML: &str = "openapi: 3.0.3\npaths:\n  /a:\n    get:\n      x: [1, {k: true}]\n  /b/{id}:\n    get: {}\n";

    #[test]
    fn yaml_pointers_are_placed_on_their_values() {
        assert_eq!(locate(YAML, Syntax::Yaml, "/openapi"), Some((1, 1)));
        assert_eq!(locate(YAML, Syntax::Yaml, "/paths/~1a/get"), Some((4, 5)));
        assert_eq!(
            locate(YAML, Syntax::Yaml, "/paths/~1a/get/x/1"),
            Some((5, 14))
        );
        assert_eq!(
            locate(YAML, Syntax::Yaml, "/paths/~1a/get/x/1/k"),
            Some((5, 15))
        );
        assert_eq!(
            locate(YAML, Syntax::Yaml, "/paths/~1b~1{id}/get"),
            Some((7, 5))
        );
        assert_eq!(locate(YAML, Syntax::Yaml, "/paths/~1c"), None);
    }
}
