//! The pages svc serves, in a real browser (Chromium over WebDriver; `tests::browser`):
//! each renders, runs under the strict Content-Security-Policy every response carries, and
//! logs no error to the browser's console.

use std::time::Duration;

use fantoccini::Locator;
use tests::browser::Browser;
use tests::{sample_papers, svc, Service};

#[tokio::test(flavor = "multi_thread")]
async fn the_api_reference_renders_every_operation_and_calls_the_api_under_the_strict_policy() {
    let dir = tempfile::tempdir().unwrap();
    svc(&["seed", "--data-dir", dir.path().to_str().unwrap(), sample_papers().to_str().unwrap()]).unwrap();
    let node = Service::start(dir.path()).await.unwrap();
    node.wait_caught_up().await.unwrap();

    let page = reqwest::get(format!("{}/docs", node.base)).await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(
        page.headers()["content-security-policy"],
        "default-src 'self'; img-src 'self' data:",
        "scripts only from svc: no inline script, no eval; data: images only (Swagger UI's icons)"
    );
    let (status, _) = node.get_bytes("/docs/assets/index.html").await.unwrap();
    assert_eq!(status, 404, "only the listed assets are served");

    let browser = Browser::start().await.unwrap_or_else(|e| panic!("{e:#}"));
    let client = &browser.client;
    client.goto(&format!("{}/docs", node.base)).await.unwrap();
    // Every namespace is listed (collapsed); opening one lists each of its operations.
    let (_, _, doc) = node.get("/openapi.json").await.unwrap();
    let tag_of = |op: &serde_json::Value| op["tags"][0].as_str().unwrap_or("default").to_owned();
    let operations: Vec<String> =
        doc["paths"].as_object().unwrap().values().flat_map(|p| p.as_object().unwrap().values().map(tag_of)).collect();
    let tags: std::collections::BTreeSet<&String> = operations.iter().collect();
    let count = |css: &'static str| async move { client.find_all(Locator::Css(css)).await.unwrap().len() };
    let started = std::time::Instant::now();
    while count(".opblock-tag").await < tags.len() && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(count(".opblock-tag").await, tags.len(), "one section per namespace of /openapi.json");
    client.find(Locator::Css("h3.opblock-tag[data-tag='pub.svc.eprint']")).await.unwrap().click().await.unwrap();
    let in_eprint = operations.iter().filter(|t| *t == "pub.svc.eprint").count();
    let started = std::time::Instant::now();
    while count(".opblock").await < in_eprint && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(count(".opblock").await, in_eprint, "one block per operation of the namespace");

    // Try one operation out, as a reader of the reference would: the call goes from the page
    // to svc (the policy's connect-src is 'self') and its answer is shown.
    let block = "//div[contains(@class,'opblock ')][.//*[@data-path='/xrpc/pub.svc.eprint.searchSubmissions']]";
    let wait = |path: &'static str| async move {
        let xpath = format!("{block}{path}");
        client.wait().at_most(Duration::from_secs(30)).for_element(Locator::XPath(&xpath)).await.unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    wait("//*[contains(@class,'opblock-summary-control')]").await.click().await.unwrap();
    wait("//button[contains(@class,'try-out__btn')]").await.click().await.unwrap();
    wait("//tr[@data-param-name='query']//input").await.send_keys("quantum").await.unwrap();
    wait("//button[contains(@class,'execute')]").await.click().await.unwrap();
    let status = wait("//table[contains(@class,'live-responses-table')]//tbody/tr/td[contains(@class,'response-col_status')]")
        .await
        .text()
        .await
        .unwrap();
    assert!(status.trim().starts_with("200"), "the call from the page answered: {status}");
    let body = wait("//table[contains(@class,'live-responses-table')]//pre[contains(@class,'microlight')]").await.text().await.unwrap();
    assert!(body.contains("\"submissions\""), "the page shows the answer: {body}");

    browser.screenshot("docs").await.unwrap();
    let errors = browser.console_errors().await.unwrap();
    assert!(errors.is_empty(), "the reference logged errors: {errors:#?}");
    browser.close().await.unwrap();
}
