/**
 * Errors. Every error response of the server has the body
 * `{"error": {"code", "message", "field"?}}`; its closed set of codes maps one
 * to one onto the classes below (the HTTP status is the fallback when a body
 * is not in that shape, e.g. from a proxy in between).
 */

/** Base of every error this client throws. */
export class MnemoError extends Error {
  override name = "MnemoError";
}

/** The server could not be reached, or the connection broke. */
export class APIConnectionError extends MnemoError {
  override name = "APIConnectionError";
}

/** The request took longer than the client's timeout. */
export class APITimeoutError extends APIConnectionError {
  override name = "APITimeoutError";
}

export interface APIErrorInit {
  status: number;
  code: string;
  message: string;
  field?: string | undefined;
  retryAfterMs?: number | undefined;
  requestId?: string | undefined;
  body?: unknown;
}

/**
 * The server answered with an error status: `code` and `message` from its
 * error body, `field` the request field it is about (when there is one),
 * `retryAfterMs` its `Retry-After`, `requestId` its `x-request-id`.
 */
export class APIError extends MnemoError {
  override name = "APIError";
  static readonly code: string = "";
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly requestId: string | undefined;
  readonly body: unknown;

  constructor(init: APIErrorInit) {
    super(`${init.status} ${init.code}: ${init.message}`);
    this.status = init.status;
    this.code = init.code;
    this.field = init.field;
    this.retryAfterMs = init.retryAfterMs;
    this.requestId = init.requestId;
    this.body = init.body;
  }
}

export class InvalidArgumentError extends APIError {
  override name = "InvalidArgumentError";
  static override readonly code: string = "invalid_argument";
}
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
  static override readonly code: string = "unauthenticated";
}
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
  static override readonly code: string = "forbidden";
}
export class NotFoundError extends APIError {
  override name = "NotFoundError";
  static override readonly code: string = "not_found";
}
export class ConflictError extends APIError {
  override name = "ConflictError";
  static override readonly code: string = "conflict";
}
/** A per-user quota of the server's policy is reached (409); not retried. */
export class QuotaExceededError extends ConflictError {
  override name = "QuotaExceededError";
  static override readonly code: string = "quota_exceeded";
}
/** A body, text, URL (414) or header block (431) over the server's limits. */
export class PayloadTooLargeError extends APIError {
  override name = "PayloadTooLargeError";
  static override readonly code: string = "payload_too_large";
}
export class InvalidConfigurationError extends APIError {
  override name = "InvalidConfigurationError";
  static override readonly code: string = "invalid_configuration";
}
/** Over the key's request rate (429); retried by the client before it is thrown. */
export class RateLimitedError extends APIError {
  override name = "RateLimitedError";
  static override readonly code: string = "rate_limited";
}
/** A component is not ready or not configured (e.g. no chat model for turns). */
export class ServiceUnavailableError extends APIError {
  override name = "ServiceUnavailableError";
  static override readonly code: string = "unavailable";
}
/** Too much concurrent work (503 with `Retry-After`). */
export class OverloadedError extends ServiceUnavailableError {
  override name = "OverloadedError";
  static override readonly code: string = "overloaded";
}
/** The chat model endpoint behind a turn failed. */
export class BadGatewayError extends APIError {
  override name = "BadGatewayError";
  static override readonly code: string = "bad_gateway";
}
export class InternalServerError extends APIError {
  override name = "InternalServerError";
  static override readonly code: string = "internal";
}

type ErrorClass = new (init: APIErrorInit) => APIError;

const BY_CODE: Record<string, ErrorClass> = Object.fromEntries(
  [
    InvalidArgumentError,
    AuthenticationError,
    PermissionDeniedError,
    NotFoundError,
    ConflictError,
    QuotaExceededError,
    PayloadTooLargeError,
    InvalidConfigurationError,
    RateLimitedError,
    ServiceUnavailableError,
    OverloadedError,
    BadGatewayError,
    InternalServerError,
  ].map((cls) => [cls.code, cls]),
);

const BY_STATUS: Record<number, ErrorClass> = {
  400: InvalidArgumentError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  414: PayloadTooLargeError,
  431: PayloadTooLargeError,
  422: InvalidConfigurationError,
  429: RateLimitedError,
  502: BadGatewayError,
  503: ServiceUnavailableError,
};

/** The error codes the server can send. */
export const ERROR_CODES: readonly string[] = Object.keys(BY_CODE);

/** The error for a response's status and (parsed, if JSON) body. */
export function errorFor(
  status: number,
  body: unknown,
  text: string,
  extra: { retryAfterMs?: number | undefined; requestId?: string | undefined } = {},
): APIError {
  const detail =
    body !== null && typeof body === "object" ? (body as { error?: unknown }).error : undefined;
  let code: string;
  let message: string;
  let field: string | undefined;
  if (
    detail !== null &&
    typeof detail === "object" &&
    typeof (detail as { code?: unknown }).code === "string"
  ) {
    const d = detail as { code: string; message?: unknown; field?: unknown };
    code = d.code;
    message = String(d.message ?? "");
    field = typeof d.field === "string" ? d.field : undefined;
  } else {
    const cls = BY_STATUS[status];
    code = cls ? (cls as unknown as { code: string }).code : `http_${status}`;
    message = text.slice(0, 500) || `HTTP ${status}`;
  }
  const cls: ErrorClass =
    BY_CODE[code] ?? BY_STATUS[status] ?? (status >= 500 ? InternalServerError : APIError);
  return new cls({ status, code, message, field, body, ...extra });
}
