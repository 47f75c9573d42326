/* sha256.c: file digests through OpenSSL's EVP interface; plans name the model they were
 * made for by this digest, so a plan for another model is refused. */
#include "placer/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

static void hex(const unsigned char md[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

void pl_sha256_buffer(const void *buf, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL);
    hex(md, out);
}

int pl_sha256_file(const char *path, char out[65], pl_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return pl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    unsigned char *buf = pl_malloc(1 << 16);
    size_t r;
    while ((r = fread(buf, 1, 1 << 16, f)) > 0)
        EVP_DigestUpdate(ctx, buf, r);
    int bad = ferror(f) ? errno : 0;
    fclose(f);
    free(buf);
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    if (bad) return pl_err_read(err, path, bad);
    hex(md, out);
    return 0;
}
