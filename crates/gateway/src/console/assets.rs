//! The console's page, script and style, compiled into the binary: no
//! build step, no files to deploy beside it, nothing fetched from
//! elsewhere (the Content-Security-Policy would refuse it anyway). The
//! page holds no data; the script asks the API for it.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("assets/console.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

pub async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE).into_response()
}

pub async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

pub async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}
