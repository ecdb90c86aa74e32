//! What a backend's response becomes in `invoke_tool`'s answer: 2xx a
//! success, anything else `backend_status` (status and error code always
//! kept); a body too large for the response budget shaped to fit
//! ([`super::shape`]) with every cut listed and the next step named
//! ([`super::paging`]), so an agent gets a usable part of a large list.

use super::envelope::{Code, Retry, ToolAnswer};
use super::paging::NextStep;
use super::shape::{Cut, Shaper};
use crate::backend::response::{BackendResponse, ResponseBody};
use serde_json::{Map, Value, json};
use sezzlee_catalog::Tool;
use sezzlee_json::{json_bytes, json_chars};

/// Statuses worth retrying as they are.
const RETRYABLE: [u16; 5] = [408, 429, 502, 503, 504];

/// Rounds of shaping at most: each one shrinks the body's room by what
/// the last answer was over (at least an eighth), so a handful suffice.
const ROUNDS: usize = 16;

/// The answer to a call whose backend answered `response`, within
/// `budget` characters whenever any answer can be.
pub fn answer(
    response: BackendResponse,
    budget: usize,
    tool: &Tool,
    arguments: &Map<String, Value>,
) -> ToolAnswer {
    let status = response.status;
    let headers = response.headers;
    let form = Form::of(status);
    let body = match response.body {
        ResponseBody::Json(value) => value,
        ResponseBody::Text(text) => Value::String(text),
        other => {
            let mut fields = Map::new();
            fields.insert("status".to_string(), json!(status));
            other.into_fields(&mut fields);
            if !headers.is_empty() {
                fields.insert("headers".to_string(), Value::Object(headers));
            }
            return form.answer(fields, None);
        }
    };
    // The envelope with a `null` body (4 characters) tells what the whole
    // body would bring it to, without building that answer to measure it.
    let empty = form
        .answer(form.fields(status, Value::Null, &headers, None), None)
        .chars();
    // Every call that fits takes this path: one measuring walk, no table
    // of sizes (the shaper builds one only for a body that must be cut).
    if empty - 4 + json_chars(&body) <= budget {
        return form.answer(form.fields(status, body, &headers, None), None);
    }
    let mut shaper = Shaper::default();
    let bytes = json_bytes(&body);
    let next = NextStep::new(tool, arguments, &body, &headers);
    let mut room = budget.saturating_sub(empty);
    for _ in 0..ROUNDS {
        let shaped = shaper.shape(&body, room);
        let step = next.sentence(&shaped.cuts);
        let note = Note {
            cuts: &shaped.cuts,
            bytes,
            budget,
            step,
        };
        let answer = form.answer(
            form.fields(status, shaped.body, &headers, Some(&note)),
            Some(&note),
        );
        let chars = answer.chars();
        if chars <= budget {
            return answer;
        }
        if room == 0 {
            break;
        }
        room = room.saturating_sub((chars - budget).max(room / 8).max(1));
    }
    // Not even the body's least form and its cuts fit (a budget smaller
    // than the envelope): left out, as before shaping existed.
    let mut fields = form.fields(status, Value::Null, &headers, None);
    fields.insert(
        "omitted".to_string(),
        json!({"reason": "over_budget", "bytes": bytes}),
    );
    form.answer(fields, None)
}

/// What shaping adds to an answer.
struct Note<'c> {
    cuts: &'c [Cut],
    bytes: usize,
    budget: usize,
    step: String,
}

impl Note<'_> {
    fn sentence(&self) -> String {
        format!(
            "The body ({} bytes) did not fit the response budget of {} characters and was shaped: shaped lists every cut. {}",
            self.bytes, self.budget, self.step
        )
    }
}

/// A success, or a `backend_status` failure with its message.
enum Form {
    Success,
    Failure { message: String, retry: Retry },
}

impl Form {
    fn of(status: u16) -> Form {
        if (200..300).contains(&status) {
            return Form::Success;
        }
        let retryable = RETRYABLE.contains(&status);
        let message = if retryable {
            format!(
                "The backend answered {status}; this is usually temporary. Wait (see retry-after if present) and retry."
            )
        } else if (300..400).contains(&status) {
            format!(
                "The backend answered {status} (a redirect, not followed). See headers.location."
            )
        } else {
            format!(
                "The backend answered {status}. Read body for its reason; fix the arguments or the request before retrying."
            )
        };
        Form::Failure {
            message,
            retry: Retry::when(retryable),
        }
    }

    /// `status`, `body`, `headers`, then what shaping adds (`shaped`,
    /// `bytes`, and a success's `message`).
    fn fields(
        &self,
        status: u16,
        body: Value,
        headers: &Map<String, Value>,
        note: Option<&Note>,
    ) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("status".to_string(), json!(status));
        fields.insert("body".to_string(), body);
        if !headers.is_empty() {
            fields.insert("headers".to_string(), Value::Object(headers.clone()));
        }
        if let Some(note) = note {
            let cuts: Vec<Value> = note.cuts.iter().map(Cut::to_value).collect();
            fields.insert("shaped".to_string(), Value::Array(cuts));
            fields.insert("bytes".to_string(), json!(note.bytes));
            if let Form::Success = self {
                fields.insert("message".to_string(), json!(note.sentence()));
            }
        }
        fields
    }

    /// The failure's message, with shaping's sentence after it.
    fn message(&self, note: Option<&Note>) -> Option<String> {
        match self {
            Form::Success => None,
            Form::Failure { message, .. } => Some(match note {
                Some(note) => format!("{message} {}", note.sentence()),
                None => message.clone(),
            }),
        }
    }

    fn answer(&self, fields: Map<String, Value>, note: Option<&Note>) -> ToolAnswer {
        match self {
            Form::Success => ToolAnswer::ok(Value::Object(fields)),
            Form::Failure { retry, .. } => ToolAnswer::fail(
                Code::BackendStatus,
                self.message(note).unwrap_or_default(),
                *retry,
                fields,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sezzlee_catalog::{Catalog, Sources};

    /// One tool per operation of a small document: paging by page number
    /// (GitHub), by the last item's id (Stripe), by token (Graph), and none.
    fn tools() -> Catalog {
        let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string"}});
        let document = json!({
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "servers": [{"url": "http://127.0.0.1:1"}],
            "paths": {
                "/github": {"get": {"operationId": "github", "parameters": [query("per_page"), query("page")], "responses": {}}},
                "/stripe": {"get": {"operationId": "stripe", "parameters": [query("limit"), query("starting_after")], "responses": {}}},
                "/graph": {"get": {"operationId": "graph", "parameters": [query("$top"), query("$skiptoken")], "responses": {}}},
                "/plain": {"get": {"operationId": "plain", "parameters": [query("q")], "responses": {}}}
            }
        });
        Catalog::build(&Sources::from_files(
            [("a.json".to_string(), document.to_string().into_bytes())],
            None,
        ))
    }

    fn response(status: u16, body: Value, headers: &[(&str, &str)]) -> BackendResponse {
        BackendResponse {
            status,
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), json!(value)))
                .collect(),
            body: ResponseBody::Json(body),
        }
    }

    fn items(count: usize, text: usize) -> Vec<Value> {
        (0..count)
            .map(|i| json!({"id": format!("it_{i}"), "name": format!("item {i}"), "text": "t".repeat(text)}))
            .collect()
    }

    /// The answer's JSON, after checking it fits `budget` and that every
    /// cut points into `original`.
    fn checked(answer: ToolAnswer, budget: usize, original: &Value) -> Value {
        let text = answer.into_text();
        assert!(
            text.chars().count() <= budget,
            "{} > {budget}",
            text.chars().count()
        );
        let payload: Value = serde_json::from_str(&text).expect("valid JSON");
        for cut in payload["shaped"].as_array().into_iter().flatten() {
            let at = cut["at"].as_str().unwrap();
            assert!(original.pointer(at).is_some(), "{at} is not in the body");
        }
        payload
    }

    #[test]
    #[ignore = "slow campaign: bodies up to the 8 MiB read cap, about two minutes in a debug build"]
    fn every_answer_fits_from_one_past_the_budget_to_the_read_cap() {
        let catalog = tools();
        let tool = catalog.tool("github").unwrap();
        let none = Map::new();
        for budget in [2_000, 60_000] {
            let empty = answer(response(200, json!([]), &[]), budget, tool, &none).chars();
            let mut sizes = vec![budget - empty + 3];
            while *sizes.last().unwrap() < 8 * 1024 * 1024 {
                sizes.push(sizes.last().unwrap() * 3);
            }
            for size in sizes {
                // An array of objects, one long string, an object of both.
                let count = size / 100 + 1;
                let bodies = [
                    Value::Array(items(count, 60)),
                    Value::String("é".repeat(size)),
                    json!({"total": count, "items": items(count, 60), "note": "n".repeat(size / 10)}),
                ];
                for body in bodies {
                    assert!(json_chars(&body) > budget - empty);
                    for status in [200, 500] {
                        let given =
                            answer(response(status, body.clone(), &[]), budget, tool, &none);
                        assert_eq!(given.is_error(), status == 500);
                        let payload = checked(given, budget, &body);
                        assert_eq!(payload["status"], status);
                        assert!(payload["shaped"].is_array(), "{size}: {payload}");
                        assert_eq!(payload["bytes"], json_bytes(&body));
                        if status == 500 {
                            assert_eq!(payload["error"], "backend_status");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_same_body_gives_the_same_answer() {
        let catalog = tools();
        let tool = catalog.tool("stripe").unwrap();
        let body = json!({"object": "list", "data": items(300, 80), "has_more": true});
        let first = answer(response(200, body.clone(), &[]), 5_000, tool, &Map::new());
        let again = answer(response(200, body, &[]), 5_000, tool, &Map::new());
        assert_eq!(first.into_text(), again.into_text());
    }

    fn message_of(tool: &str, body: Value, headers: &[(&str, &str)], arguments: Value) -> String {
        let catalog = tools();
        let tool = catalog.tool(tool).unwrap();
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        let payload = checked(
            answer(
                response(200, body.clone(), headers),
                3_000,
                tool,
                &arguments,
            ),
            3_000,
            &body,
        );
        payload["message"].as_str().unwrap().to_string()
    }

    #[test]
    fn the_next_step_uses_the_operations_own_paging() {
        let list = Value::Array(items(100, 50));
        let message = message_of("github", list.clone(), &[], json!({"per_page": "100"}));
        let kept = message_kept(&message);
        assert!(
            message.contains(&format!("per_page={kept} and page=2")),
            "{message}"
        );
        // Page 3 of 100: the next item is the 200 + kept-th.
        let message = message_of("github", list, &[], json!({"per_page": 100, "page": 3}));
        let kept = message_kept(&message) as u64;
        let skipped = 200 + kept;
        let (size, page) = numbers_after(&message, "per_page=", " and page=");
        assert_eq!((page - 1) * size, skipped, "{message}");

        let stripe = json!({"object": "list", "data": items(100, 50), "has_more": true});
        let message = message_of("stripe", stripe.clone(), &[], json!({}));
        let kept = message_kept(&message);
        assert!(
            message.contains(&format!("starting_after=it_{}", kept - 1)),
            "{message}"
        );

        let graph = json!({"value": items(100, 50), "@odata.nextLink": "https://graph.microsoft.com/v1.0/users?$top=100&$skiptoken=X1"});
        let message = message_of("graph", graph, &[], json!({}));
        assert!(message.contains("$top="), "{message}");
        assert!(message.contains("@odata.nextLink"), "{message}");

        let message = message_of("plain", Value::Array(items(100, 50)), &[], json!({}));
        assert!(
            message.contains("There is no way to page this operation"),
            "{message}"
        );
        assert!(message.contains("narrow the call with q"), "{message}");
    }

    fn message_kept(message: &str) -> usize {
        let rest = message.split("Kept the first ").nth(1).unwrap();
        rest.split(' ').next().unwrap().parse().unwrap()
    }

    fn numbers_after(message: &str, first: &str, second: &str) -> (u64, u64) {
        let a = message.split(first).nth(1).unwrap();
        let (a, b) = a.split_once(second).unwrap();
        let digits = |text: &str| {
            text.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        };
        (digits(a).parse().unwrap(), digits(b).parse().unwrap())
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            ".{0,300}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 2_000, 40, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..40).prop_map(Value::Array),
                prop::collection::vec(("[a-z/~]{0,12}", inner), 0..20)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn any_body_fits_parses_and_points_into_the_original(
            body in json_value(),
            budget in 400usize..4_000,
            status in prop::sample::select(vec![200u16, 404, 503]),
        ) {
            let catalog = tools();
            let tool = catalog.tool("github").unwrap();
            let given = answer(response(status, body.clone(), &[]), budget, tool, &Map::new());
            let again = answer(response(status, body.clone(), &[]), budget, tool, &Map::new());
            let text = given.into_text();
            prop_assert_eq!(&text, &again.into_text());
            prop_assert!(text.chars().count() <= budget);
            let payload: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(&payload["status"], &json!(status));
            for cut in payload["shaped"].as_array().into_iter().flatten() {
                prop_assert!(body.pointer(cut["at"].as_str().unwrap()).is_some());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]
        #[test]
        #[ignore = "slow campaign: random bodies grown to the 8 MiB read cap"]
        fn any_body_up_to_the_read_cap_fits(
            part in json_value(),
            budget in 400usize..60_000,
        ) {
            // The random value repeated until the body is about 8 MiB.
            let copies = (8 * 1024 * 1024 / json_chars(&part).max(1)).clamp(1, 1 << 20);
            let body = Value::Array(vec![part; copies]);
            let catalog = tools();
            let tool = catalog.tool("github").unwrap();
            let given = answer(response(200, body.clone(), &[]), budget, tool, &Map::new());
            let text = given.into_text();
            prop_assert!(text.chars().count() <= budget);
            let payload: Value = serde_json::from_str(&text).unwrap();
            for cut in payload["shaped"].as_array().into_iter().flatten() {
                prop_assert!(body.pointer(cut["at"].as_str().unwrap()).is_some());
            }
        }
    }
}
