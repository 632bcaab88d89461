// A signing key pair for JWT tests: the private key signs, the public JWK is what an issuer publishes in its JWKS.
import { exportJWK, generateKeyPair, type JWK } from "jose";

export type SigningKey = { kid: string; alg: "RS256" | "ES256"; privateKey: CryptoKey; publicJwk: JWK };

export async function newSigningKey(kid: string, alg: "RS256" | "ES256" = "RS256"): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { kid, alg, privateKey, publicJwk };
}
