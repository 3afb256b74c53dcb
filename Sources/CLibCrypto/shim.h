// The only C that UnlockIT sees from OpenSSL's libcrypto: AES (EVP), HKDF (EVP_PKEY),
// the CSPRNG and the constant-time compare. Swift wrappers live in LockProtocol/Crypto.
#ifndef UNLOCKIT_CLIBCRYPTO_SHIM_H
#define UNLOCKIT_CLIBCRYPTO_SHIM_H
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#endif
