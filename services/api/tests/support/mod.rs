//! The in-process server every gRPC test talks to: a router on a free loopback port, a channel
//! to it, and the sender whose drop stops it.

use tonic::transport::Channel;
use tonic::transport::server::Router;

/// Serves `router` on 127.0.0.1 and connects to it; the server runs until the sender drops.
pub async fn serve(router: Router) -> (Channel, tokio::sync::oneshot::Sender<()>) {
    let listener = vernier_api::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(vernier_api::serve(router, listener, async {
        let _ = rx.await;
    }));
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, tx)
}
