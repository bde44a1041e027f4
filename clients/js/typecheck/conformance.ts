// index.d.ts against index.js: every declared export is in the code with
// a type the declaration admits, and the code exports nothing undeclared.
import * as decl from "./index.js";
import * as impl from "./impl.js";

export const declared: typeof decl = impl;

type Undeclared = Exclude<keyof typeof impl, keyof typeof decl>;
export const nothingUndeclared: [Undeclared] extends [never] ? true : Undeclared = true;

// Each error class the code throws is the declared one's subclass.
export const errors: Array<typeof decl.EdgeOrdersError> = [
  impl.NetworkError, impl.RejectedError, impl.KeyReusedError, impl.InvalidOrderError,
  impl.RateLimitedError, impl.UnauthorizedError, impl.InProgressError,
  impl.StorageUnavailableError, impl.NotFoundError, impl.InvalidKeyError,
  impl.UnexpectedResponseError, impl.OutcomeUnknownError, impl.OutcomeUnresolvedError,
  impl.CertificateError, impl.InvalidRequestError,
];
