//! An independent MCP client (Python's `mcp` package, Streamable HTTP) drives
//! request → prepared → commit in a later human turn → the run completes → its
//! status preview.

use super::enabled;
use crate::environments::callers;
use crate::runs::finished;
use crate::support::TestApp;
use crate::tasks::ready_environment_version;
use domain::principal::PrincipalType::User;
use serde_json::{Value, json};

/// The client: initializes, lists the tools, calls one with a turn, prints
/// `{"tools": [...], "result": <structured content>, "is_error": bool}`.
const CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

url, token, turn, tool, arguments = sys.argv[1:6]

async def main():
    headers = {"Authorization": f"Bearer {token}", "X-Sandbox-Turn": turn}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = [t.name for t in (await session.list_tools()).tools]
                result = await session.call_tool(tool, json.loads(arguments))
                print(json.dumps({"tools": tools, "result": result.structured_content,
                                  "is_error": result.is_error}))

asyncio.run(main())
"#;

/// Runs the client for one tool call (the server answers on this test's runtime
/// meanwhile).
async fn client(url: &str, token: &str, turn: &str, tool: &str, arguments: Value) -> Value {
    let output = tokio::process::Command::new("python3")
        .current_dir(std::env::temp_dir())
        .args(["-c", CLIENT, url, token, turn, tool, &arguments.to_string()])
        .output()
        .await
        .expect("python3 runs (scripts/test.sh installs the mcp package)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| panic!("{stdout}"))
}

#[tokio::test]
async fn an_independent_mcp_client_proposes_confirms_and_reads_the_run() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ready = ready_environment_version(&boss).await;
    let work =
        "printf 'done for %s' \"$(cat \"$SERVICE_INPUTS_FILE\")\" > \"$SERVICE_OUTPUT_FILE\"\n";
    let confirm = json!({"requires_confirmation": true});
    let (_, version) = enabled(&boss, &dm, &lab.to_string(), &ready, work, confirm).await;
    let url = format!("{}/mcp", app.base);
    let at = |seq: i64| super::turn(&app, lab, seq, (User, seed.user("acme", "member")), true);

    let request = json!({"mode": "request", "task_version_id": version, "input": {"n": 7}});
    let first = client(&url, &member.token, &at(1), "sandbox_submit_job", request).await;
    assert_eq!(first["tools"].as_array().unwrap().len(), 5, "{first}");
    assert_eq!(first["is_error"], false);
    let prepared = &first["result"];
    assert_eq!(prepared["kind"], "prepared", "{prepared}");

    let commit = json!({"mode": "commit", "proposal_receipt": prepared["proposal_receipt"]});
    let second = client(&url, &member.token, &at(2), "sandbox_submit_job", commit).await;
    let submitted = &second["result"];
    assert_eq!(submitted["kind"], "submitted", "{second}");
    let run = submitted["run_id"].as_str().unwrap();
    let done = finished(&member, &lab.to_string(), run).await;
    assert_eq!(done["status"], "completed", "{done}");

    let status = client(
        &url,
        &member.token,
        &at(3),
        "sandbox_job_status",
        json!({"run_id": run}),
    )
    .await;
    let output = &status["result"]["output"];
    assert_eq!(output["text"], r#"done for {"n":7}"#, "{status}");
    assert_eq!(output["label"], "untrusted_customer_output");

    let refused = client(
        &url,
        &member.token,
        &at(4),
        "sandbox_submit_job",
        json!({"mode": "commit"}),
    )
    .await;
    assert_eq!(refused["is_error"], true);
    assert_eq!(refused["result"]["error"], "validation_error", "{refused}");
}
