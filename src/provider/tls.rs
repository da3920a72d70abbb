//! TLS for every HTTP client glrs builds: rustls with ring's cryptography,
//! checking servers against the system's roots as reqwest would
//! (`rustls-platform-verifier`), but reading those roots at the first TLS
//! handshake rather than when a client is built. A plain-HTTP endpoint (a
//! local model server) then never reads `/etc/ssl`: issue 32 counted about
//! 350 opens and reads of it, a third of a one-shot turn's system calls.

use std::sync::{Arc, LazyLock, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The client configuration every client shares (a clone shares the
/// verifier, so the roots are read once per process at most); `None` only
/// if rustls refused ring's protocol versions, which it does not (the
/// caller then lets reqwest build its own, reading the roots at once).
pub(super) fn client_config() -> Option<rustls::ClientConfig> {
    static CONFIG: LazyLock<Option<rustls::ClientConfig>> = LazyLock::new(build);
    CONFIG.clone()
}

fn build() -> Option<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(LazyRoots { provider: provider.clone(), verifier: OnceLock::new() });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // What reqwest offers when it builds the configuration itself.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Some(config)
}

/// The platform's verifier, made at the first certificate it is asked to
/// check. Handshake signatures need only the cryptography, not the roots.
#[derive(Debug)]
struct LazyRoots {
    provider: Arc<CryptoProvider>,
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl LazyRoots {
    fn algorithms(&self) -> &WebPkiSupportedAlgorithms {
        &self.provider.signature_verification_algorithms
    }
}

impl ServerCertVerifier for LazyRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verifier =
            self.verifier.get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone())).as_ref();
        verifier.map_err(Clone::clone)?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, self.algorithms())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, self.algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms().supported_schemes()
    }
}
