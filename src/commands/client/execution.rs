//! Running each `sezzlee client` subcommand against `sezzlee_client`:
//! one client per invocation, the gateway's three tools through
//! `GatewayClient`, the session ended whatever happened. What reaches the
//! terminal is `rendering`'s business; this file only decides what to ask
//! and which exit code the answer means.

use super::arguments::{ClientArgs, ClientCommand, config, parse_arguments};
use super::rendering::{
    Output, print_call, print_discover, print_event, print_invoke, print_load, print_search,
    print_tools,
};
use sezzlee_client::listen::{ListenEvent, ListenOptions};
use sezzlee_client::{Client, ClientError, Detail, GatewayClient, Search};
use std::process::ExitCode;

pub(super) async fn execute(args: ClientArgs) -> Result<ExitCode, ClientError> {
    let client = Client::new(config(&args)?)?;
    let output = Output::of_flag(args.json);
    let outcome = match args.command {
        ClientCommand::Listen {
            count,
            max_reconnects,
        } => listen(&client, output, count, max_reconnects).await,
        ClientCommand::Discover => discover(&client, output).await,
        ClientCommand::Tools => tools(&client, output).await,
        ClientCommand::Call { name, arguments } => {
            let arguments = parse_arguments(arguments.as_deref())?;
            let result = client.call_tool(&name, arguments).await;
            result.map(|result| print_call(&result, output))
        }
        ClientCommand::Search {
            query,
            tags,
            limit,
            schema,
        } => {
            let gateway = GatewayClient::new(client);
            let detail = if schema {
                Detail::Schema
            } else {
                Detail::Cards
            };
            let search = Search {
                query: &query,
                tags: &tags,
                limit,
                detail,
            };
            let result = gateway.search(search).await;
            let _ = gateway.client().close().await;
            return result.map(|result| print_search(&result, output, detail));
        }
        ClientCommand::Load { name } => {
            let gateway = GatewayClient::new(client);
            let outcome = gateway.load(&name).await;
            let _ = gateway.client().close().await;
            return outcome.map(|outcome| print_load(&outcome, output));
        }
        ClientCommand::Invoke {
            name,
            arguments,
            pin,
            no_retry,
        } => {
            let arguments = parse_arguments(arguments.as_deref())?;
            let gateway = GatewayClient::new(client).retry_on_change(!no_retry);
            let outcome = gateway.invoke(&name, arguments, pin.as_deref()).await;
            let _ = gateway.client().close().await;
            return outcome.map(|outcome| print_invoke(&outcome, output));
        }
    };
    // End a legacy session whatever happened; its failure is not the command's.
    if let Err(err) = client.close().await {
        tracing::debug!("ending the session failed: {err}");
    }
    outcome
}

async fn discover(client: &Client, output: Output) -> Result<ExitCode, ClientError> {
    let mut server = client.discover().await?;
    // Every version the server speaks: what discover (or initialize) says,
    // and the initialize-era versions it answers in kind.
    for version in client.legacy_versions().await {
        if !server.supported_versions.contains(&version) {
            server.supported_versions.push(version);
        }
    }
    print_discover(&server, output);
    Ok(ExitCode::SUCCESS)
}

async fn tools(client: &Client, output: Output) -> Result<ExitCode, ClientError> {
    let list = client.list_tools().await?;
    print_tools(&list, output);
    Ok(ExitCode::SUCCESS)
}

async fn listen(
    client: &Client,
    output: Output,
    count: Option<u64>,
    max_reconnects: u32,
) -> Result<ExitCode, ClientError> {
    let options = ListenOptions {
        max_reconnects,
        ..ListenOptions::default()
    };
    let mut listener = client.listen(options).await?;
    let mut seen = 0u64;
    loop {
        let next = tokio::select! {
            next = listener.next() => next,
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
        };
        let Some(event) = next else {
            return Ok(ExitCode::SUCCESS);
        };
        let event = event?;
        print_event(&event, output);
        match event {
            ListenEvent::Closed => return Ok(ExitCode::SUCCESS),
            ListenEvent::Notification { .. } => {
                seen += 1;
                if count.is_some_and(|count| seen >= count) {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            _ => {}
        }
    }
}
