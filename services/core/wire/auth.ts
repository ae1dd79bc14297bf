import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

// Who may take part in a run. Transmitter and receiver share one secret, AUTH_TOKEN. Control
// requests that change state carry it as a bearer token. Data connections never carry it: each
// presents its section's credential, a key derived from the token and the section's id, so a key
// seen on the wire (ZeroMQ's PLAIN and the TCP hello are clear text) opens one section and no more,
// and no section can be joined without the token.

/** What AUTH_TOKEN allows: RFC 6750's token68 characters (safe in any header), 16 to 256 of them. */
export const AUTH_TOKEN_PATTERN = /^[A-Za-z0-9._~+/-]{16,256}=*$/;

/** Bytes of a section key (HMAC-SHA256). */
export const SECTION_KEY_BYTES = 32;

/** Magic at the start of the TCP hello: "ITBH". */
const HELLO_MAGIC = 0x49544248;

/** Bytes of the hello record a TCP link opens with: magic, section id, key. */
export const HELLO_BYTES = 8 + SECTION_KEY_BYTES;

/** The proof a data connection presents: its section's id and key, and the key in text form. */
export interface SectionCredential {
  sectionId: number;
  key: Buffer;
  /** `<sectionId>.<key in base64url>`: for headers, call metadata and PLAIN passwords. */
  text: string;
}

/** The credential of section `sectionId` under `token`. */
export function sectionCredential(token: string, sectionId: number): SectionCredential {
  const key = createHmac('sha256', token).update(`itb section ${sectionId}`).digest();
  return { sectionId, key, text: `${sectionId}.${key.toString('base64url')}` };
}

/** True when `presented` equals `expected`, in time that does not depend on where they differ. */
export function secretsEqual(presented: string | Buffer, expected: string | Buffer): boolean {
  // Hashing first gives equal lengths, so even the length is not leaked by an early return.
  const digest = (value: string | Buffer): Buffer => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The bearer token of an `Authorization` header value; undefined when it is not one. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer +(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** The TCP hello for `credential`. */
export function encodeHello(credential: SectionCredential): Buffer {
  const hello = Buffer.allocUnsafe(HELLO_BYTES);
  hello.writeUInt32BE(HELLO_MAGIC, 0);
  hello.writeUInt32BE(credential.sectionId, 4);
  credential.key.copy(hello, 8);
  return hello;
}

/** The text form of the credential a TCP hello carries; undefined when the bytes are not a hello. */
export function helloCredentialText(hello: Buffer): string | undefined {
  if (hello.length !== HELLO_BYTES || hello.readUInt32BE(0) !== HELLO_MAGIC) return undefined;
  return `${hello.readUInt32BE(4)}.${hello.subarray(8).toString('base64url')}`;
}

/** True when `presented` is the text form of `credential`. */
export function credentialMatches(presented: string, credential: SectionCredential): boolean {
  return secretsEqual(presented, credential.text);
}

/** What fstat says of an open secret file: its kind, owner and permission bits. */
export interface SecretFileFacts {
  regularFile: boolean;
  ownerUid: number;
  mode: number;
}

/** A secret file's verdict: trusted (with why, for the log) or refused (with why and the fix). */
export type SecretFileVerdict = { trusted: true; because: string } | { trusted: false; reason: string };

/** A file mode as chmod writes it: 0640. */
export function octalMode(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/**
 * Whether a process running as `processUid` (undefined: a platform without POSIX owners) may
 * trust the secret file `shownPath`, from the fstat of the open file. Its own file must be private
 * (no group or other bits: 0600, 0400), since anyone who can read it can join a run and anyone who
 * can write it can choose the secret. A file owned by root is trusted with group read: only root
 * can have placed it, and an orchestrator's secret mount (Kubernetes with fsGroup) gives the
 * service's group read and nothing more; group write or any other bit is refused. Any other owner
 * can change the secret under the service: refused.
 */
export function judgeSecretFile(
  facts: SecretFileFacts,
  processUid: number | undefined,
  shownPath: string,
): SecretFileVerdict {
  if (!facts.regularFile) return { trusted: false, reason: 'not a regular file' };
  if (processUid === undefined)
    return { trusted: true, because: 'a regular file (this platform has no file owners to check)' };
  const mode = octalMode(facts.mode);
  const own = facts.ownerUid === processUid;
  if (facts.ownerUid === 0 && (facts.mode & 0o027) === 0) {
    return {
      trusted: true,
      because:
        `owned by root${own ? ' (this process)' : ''}, mode ${mode}: only root can have placed it (a secret ` +
        `mount), and no one outside its group can read it`,
    };
  }
  if (own && (facts.mode & 0o077) === 0)
    return { trusted: true, because: `owned by this process's uid ${processUid}, mode ${mode}` };
  if (own) return { trusted: false, reason: `mode ${mode} allows group/others to use it: \`chmod 600 ${shownPath}\`` };
  if (facts.ownerUid === 0) {
    return {
      trusted: false,
      reason:
        `owned by root with mode ${mode}, which lets its group write it or others use it (a root-owned secret may ` +
        `be readable by its group, no more): \`chmod g-w,o-rwx ${shownPath}\``,
    };
  }
  return {
    trusted: false,
    reason:
      `owned by uid ${facts.ownerUid}, not by uid ${processUid} (this process) or root, so uid ${facts.ownerUid} ` +
      `can change the secret: use a file of uid ${processUid}'s with mode 0600`,
  };
}
