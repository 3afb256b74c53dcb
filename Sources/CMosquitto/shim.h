// The only C that UnlockIT sees for MQTT: libmosquitto, the Linux readiness API (epoll, eventfd)
// the Swift event loop drives many libmosquitto clients with, and the part of OpenSSL's libssl a
// client needs to hand libmosquitto a TLS context of its own (MOSQ_OPT_SSL_CTX): trust, the
// lowest protocol version, the name the broker's certificate must carry.
// The Swift client lives in Sources/MQTT.
#ifndef UNLOCKIT_CMOSQUITTO_SHIM_H
#define UNLOCKIT_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <openssl/err.h>

// Macros in OpenSSL, which Swift cannot call.
static inline int unlockit_ssl_ctx_require_tls12(SSL_CTX *ctx) {
    return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 ? 1 : 0;
}
static inline int unlockit_ssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name) == 1 ? 1 : 0;
}
#endif
