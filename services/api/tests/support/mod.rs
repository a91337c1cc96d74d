//! The in-process server every gRPC test talks to: a router on a free loopback port, a channel
//! to it, and the sender whose drop stops it.

use tonic::transport::Channel;
use tonic::transport::server::Router;

/// Serves `router` on 127.0.0.1 and connects to it; the server runs until the sender drops.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub async fn serve(router: Router) -> (Channel, tokio::sync::oneshot::Sender<()>) {
    let (channel, _, tx) = serve_at(router).await;
    (channel, tx)
}

/// [`serve`], with the server's address for requests that name it.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub async fn serve_at(router: Router) -> (Channel, String, tokio::sync::oneshot::Sender<()>) {
    let listener = vernier_api::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(vernier_api::serve(router, listener, async {
        let _ = rx.await;
    }));
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, address, tx)
}
