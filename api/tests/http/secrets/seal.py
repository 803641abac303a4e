"""An independent client of the secret transit envelope, written with Python's
`cryptography` package: reads {"public_key_pem", "value"} on stdin and prints the
SandboxEncryptedValue {encrypted_key, iv, ciphertext} (base64) that encrypts the
value to the key: a fresh AES-256-GCM key wrapped with RSA-OAEP-SHA256."""

import base64
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

request = json.load(sys.stdin)
public_key = serialization.load_pem_public_key(request["public_key_pem"].encode())
key = AESGCM.generate_key(bit_length=256)
iv = os.urandom(12)
ciphertext = AESGCM(key).encrypt(iv, request["value"].encode(), None)
encrypted_key = public_key.encrypt(
    key,
    padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None),
)
b64 = lambda data: base64.b64encode(data).decode()
json.dump({"encrypted_key": b64(encrypted_key), "iv": b64(iv), "ciphertext": b64(ciphertext)}, sys.stdout)
