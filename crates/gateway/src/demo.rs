//! The demo orders backend behind the shipped `catalogs/orders.yaml`.
//!
//! Served by the gateway itself under `/demo`, so `sezzlee serve` on the
//! shipped catalog works end to end with no other process: every demo tool
//! can be searched, loaded and invoked. State is in memory and starts from
//! the same three orders on every start. It answers only while it is
//! wanted (setting `demo_backend`, `auto` by default: while a served
//! document's backend is [`BASE_URL`]), so a gateway serving other
//! catalogs exposes no writable toy API beside them.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
struct Order {
    id: u64,
    item: String,
    quantity: u64,
    owner: String,
    status: &'static str,
    coupon: Option<String>,
    notes: Vec<Value>,
}

impl Order {
    fn to_json(&self) -> Value {
        json!({"id": self.id, "item": self.item, "quantity": self.quantity, "owner": self.owner, "status": self.status, "coupon": self.coupon})
    }
}

#[derive(Default)]
struct Orders {
    next_id: u64,
    by_id: BTreeMap<u64, Order>,
}

type Shared = Arc<Mutex<Orders>>;

/// The backend base URL (as a sidecar writes it) that names this demo:
/// the gateway's own address, then `/demo`.
pub const BASE_URL: &str = "${SEZZLEE_SELF}/demo";

/// Whether a document's backend base URL, as written, is the demo's.
pub fn is_demo_base_url(base_url: &str) -> bool {
    base_url.trim_end_matches('/') == BASE_URL
}

fn seeded() -> Orders {
    let mut orders = Orders {
        next_id: 4,
        ..Orders::default()
    };
    for (id, item, quantity, owner, status) in [
        (1, "mechanical keyboard", 2, "alice", "open"),
        (2, "4k monitor", 1, "bob", "shipped"),
        (3, "wireless mouse", 3, "alice", "open"),
    ] {
        orders.by_id.insert(
            id,
            Order {
                id,
                item: item.to_string(),
                quantity,
                owner: owner.to_string(),
                status,
                coupon: None,
                notes: Vec::new(),
            },
        );
    }
    orders
}

/// The demo API's routes, relative to `/demo`.
pub fn router<S>() -> Router<S> {
    let state: Shared = Arc::new(Mutex::new(seeded()));
    Router::new()
        .route("/orders", get(list_orders).post(create_order))
        .route("/orders/{id}", get(get_order).delete(purge_order))
        .route("/orders/{id}/cancel", post(cancel_order))
        .route("/orders/{id}/notes", get(list_notes).post(add_note))
        .route("/invoices/{order_id}", get(get_invoice))
        .with_state(state)
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn not_found(id: u64) -> Response {
    reply(
        StatusCode::NOT_FOUND,
        json!({"error": "not_found", "message": format!("There is no order {id}.")}),
    )
}

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, Orders> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Deserialize)]
struct ListQuery {
    status: Option<String>,
    limit: Option<usize>,
}

async fn list_orders(State(state): State<Shared>, Query(query): Query<ListQuery>) -> Response {
    let orders = lock(&state);
    let limit = query.limit.unwrap_or(20).clamp(1, 100);
    let listed: Vec<Value> = orders
        .by_id
        .values()
        .rev()
        .filter(|o| query.status.as_deref().is_none_or(|s| s == o.status))
        .take(limit)
        .map(Order::to_json)
        .collect();
    reply(StatusCode::OK, Value::Array(listed))
}

async fn create_order(State(state): State<Shared>, body: Option<axum::Json<Value>>) -> Response {
    let body = body.map(|b| b.0).unwrap_or(Value::Null);
    let item = body.get("item").and_then(Value::as_str);
    let quantity = body
        .get("quantity")
        .and_then(Value::as_u64)
        .filter(|q| *q >= 1);
    let (Some(item), Some(quantity)) = (item, quantity) else {
        return reply(
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_order", "message": "An order needs item (string) and quantity (integer >= 1)."}),
        );
    };
    let mut orders = lock(&state);
    let id = orders.next_id;
    orders.next_id += 1;
    let order = Order {
        id,
        item: item.to_string(),
        quantity,
        owner: "alice".to_string(),
        status: "open",
        coupon: body
            .get("coupon")
            .and_then(Value::as_str)
            .map(str::to_string),
        notes: Vec::new(),
    };
    let answer = order.to_json();
    orders.by_id.insert(id, order);
    reply(StatusCode::CREATED, answer)
}

async fn get_order(State(state): State<Shared>, Path(id): Path<u64>) -> Response {
    match lock(&state).by_id.get(&id) {
        Some(order) => reply(StatusCode::OK, order.to_json()),
        None => not_found(id),
    }
}

async fn purge_order(State(state): State<Shared>, Path(id): Path<u64>) -> Response {
    match lock(&state).by_id.remove(&id) {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => not_found(id),
    }
}

async fn cancel_order(State(state): State<Shared>, Path(id): Path<u64>) -> Response {
    let mut orders = lock(&state);
    let Some(order) = orders.by_id.get_mut(&id) else {
        return not_found(id);
    };
    if order.status == "shipped" {
        return reply(
            StatusCode::CONFLICT,
            json!({"error": "already_shipped", "message": format!("Order {id} has shipped and can no longer be cancelled.")}),
        );
    }
    // Revision 2 of this operation: cancelling also refunds the payment.
    order.status = "cancelled";
    let mut answer = order.to_json();
    answer["refunded"] = json!(true);
    reply(StatusCode::OK, answer)
}

async fn list_notes(State(state): State<Shared>, Path(id): Path<u64>) -> Response {
    match lock(&state).by_id.get(&id) {
        Some(order) => reply(StatusCode::OK, Value::Array(order.notes.clone())),
        None => not_found(id),
    }
}

async fn add_note(
    State(state): State<Shared>,
    Path(id): Path<u64>,
    body: Option<axum::Json<Value>>,
) -> Response {
    let text = body
        .as_ref()
        .and_then(|b| b.get("text"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut orders = lock(&state);
    let Some(order) = orders.by_id.get_mut(&id) else {
        return not_found(id);
    };
    let Some(text) = text else {
        return reply(
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_note", "message": "A note needs text."}),
        );
    };
    let note = json!({"id": order.notes.len() + 1, "text": text, "author": "alice"});
    order.notes.push(note.clone());
    reply(StatusCode::CREATED, note)
}

async fn get_invoice(State(state): State<Shared>, Path(order_id): Path<u64>) -> Response {
    match lock(&state).by_id.get(&order_id) {
        Some(order) => reply(
            StatusCode::OK,
            json!({"orderId": order.id, "amount": 49.5 * order.quantity as f64, "currency": "EUR"}),
        ),
        None => not_found(order_id),
    }
}
