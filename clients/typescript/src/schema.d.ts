// Generated from mnemo serve's /openapi.json by scripts/gen-types.mjs
// (openapi-typescript). Do not edit: run `npm run gen:types` against a
// server built from this checkout; `npm run check:types` fails on drift.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process is alive. */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Health"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus exposition: the text format 0.0.4, or OpenMetrics 1.0 with
         *     `Accept: application/openmetrics-text`. Needs an admin key (any tenant)
         *     unless the server runs in `--insecure-dev` mode; counts are global, not
         *     per tenant.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Prometheus text format (or OpenMetrics) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/plain": string;
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document. */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OpenAPI 3.1 document */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": Record<string, never>;
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The store answers, the indexes are open (reconciled at start) and the
         *     embedder embeds (checked at most every 5 s; a success is reused in
         *     between); 503 while shutting down. `index_lag` says how far the index
         *     repair loop is behind the store (feed changes not applied yet, how long
         *     the oldest has waited, the last failed repair); 503 when the oldest has
         *     waited more than 60 s.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Health"];
                    };
                };
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Health"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/chat/completions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * OpenAI-compatible chat completions with the user's memories injected.
         *     The body is the standard OpenAI one plus `user`; the answer is the
         *     upstream's, streamed when `stream` is true.
         */
        post: {
            parameters: {
                query?: never;
                header?: {
                    /** @description Thread whose working memory is searched second */
                    "X-Mnemo-Thread"?: string | null;
                };
                path?: never;
                cookie?: never;
            };
            /** @description An OpenAI chat-completions body; `user` names the user (required with agent keys) */
            requestBody: {
                content: {
                    "application/json": Record<string, never>;
                };
            };
            responses: {
                /** @description The upstream's answer as it is: JSON, or server-sent events with `stream: true`; header `x-mnemo-memories` counts the injected memories */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A user key naming another user */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description `rate_limited` (Retry-After): this key's rate limit, or the user's limits.model_calls_per_user_per_minute */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description The model endpoint is down, timed out or failed */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description No model is configured */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/context": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Build the memory block for a prompt: the user's relevant memories, packed
         *     within `budget_fraction` of `model_context_tokens`.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["ContextRequest"];
                };
            };
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ContextBlock"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A user key naming another user */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Overloaded (Retry-After) */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/evals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Past evaluation reports (from the server's report directory, newest
         *     first) and the sets an evaluation can run on (admin).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["EvalsResponse"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        /** Start an evaluation in the background (admin). */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["EvalRequest"];
                };
            };
            responses: {
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["EvalJob"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Not an admin key */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description An evaluation is already running */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/evals/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An evaluation's status, and its report once done (admin). */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Evaluation id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["EvalJob"];
                    };
                };
                /** @description Invalid input: a malformed parameter or body (`invalid_argument`) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/index": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Index health and lag against the store (admin; process-wide, as `/metrics`). */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["IndexHealth"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The lifecycle jobs and their last runs (admin; runs cover every tenant). */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["JobsResponse"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{name}/dry-run": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** What a job would do now, without taking its lease or writing anything (admin). */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description `ttl-sweep` or `weekly-cleanup` */
                    name: "ttl-sweep" | "weekly-cleanup";
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["DryRunResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's API keys (admin). */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["KeysResponse"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        /** Create a key in the admin's own tenant; the secret is in this response only. */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["CreateKey"];
                };
            };
            responses: {
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["CreatedKey"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke a key of the admin's own tenant (it stops authenticating at once). */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Key id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["KeyView"];
                    };
                };
                /** @description Invalid input: a malformed parameter or body (`invalid_argument`) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description No unrevoked key with this id in the tenant */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List memories, oldest first, with cursor pagination. */
        get: {
            parameters: {
                query?: {
                    /**
                     * @description Required with a user key (it is filled in); an agent or admin key
                     *     without it lists every user of the tenant.
                     */
                    user_id?: string;
                    tier?: components["schemas"]["Tier"];
                    status?: components["schemas"]["Status"];
                    thread_id?: string;
                    kind?: components["schemas"]["Kind"];
                    /** @description `next_cursor` of the previous page. */
                    cursor?: string;
                    /** @description 1..=500, default 50. */
                    limit?: number;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ListResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        /** Add one or many memories. All are validated before any is written. */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["AddRequest"];
                };
            };
            responses: {
                /** @description Stored (committed). Header `x-mnemo-indexed: false` when an index update failed after the commit: the memory is stored and becomes searchable when the repair loop has indexed it (seconds) */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["AddResponse"];
                    };
                };
                /** @description Invalid input */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Missing or invalid key */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Another user's memory, or reference memory without an admin key */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description `conflict`: the user's data is being erased; or `quota_exceeded`: the user would hold more than limits.max_memories_per_user memories (nothing written) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too many memories, text too long or metadata too large */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited (Retry-After) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Overloaded (Retry-After) */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read one memory. */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Memory"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description No such memory, or not visible to this key */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Soft-delete a memory: gone from retrieval, kept with its history. */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["DeleteResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /** Change a memory's text, importance, metadata or expiry. */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["PatchRequest"];
                };
            };
            responses: {
                /** @description The memory after the change */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Memory"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Changed concurrently; read it again */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        trace?: never;
    };
    "/v1/memories/{id}/confirm": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Confirm a pending candidate: it becomes active. */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Memory"];
                    };
                };
                /** @description Invalid input: a malformed parameter or body (`invalid_argument`) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Not a pending candidate */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/{id}/history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every change to a memory, by whom and when. */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["HistoryResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/{id}/lineage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A memory's supersede chain. */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["LineageResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/{id}/reject": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Reject a pending candidate: it is soft-deleted (restorable). */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Memory"];
                    };
                };
                /** @description Invalid input: a malformed parameter or body (`invalid_argument`) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Not a pending candidate */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/{id}/restore": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Restore a soft-deleted, archived or expired memory to active. */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Memory"];
                    };
                };
                /** @description Invalid input: a malformed parameter or body (`invalid_argument`) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Nothing to restore */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/{id}/supersede": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replace a memory with a corrected text: the old one becomes `superseded`,
         *     linked to its successor; history shows both.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Memory id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["SupersedeRequest"];
                };
            };
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["SupersedeResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/policy": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The memory policy in force (read-only). */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["PolicyResponse"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/reference/documents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Ingest one reference document (admin). */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["DocumentBody"];
                };
            };
            responses: {
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["DocumentResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Not an admin key */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/reference/documents/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete a reference document and its chunks (admin). */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Document id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["DocumentDeleted"];
                    };
                };
                /** @description Invalid input: a malformed parameter or body (`invalid_argument`) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Not an admin key */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Search a user's memories (long-term, the thread's working memory, and the
         *     tenant's reference memory).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["SearchBody"];
                };
            };
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["SearchResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A user key searching another user */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Overloaded (Retry-After) */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/threads": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Start a thread for a user, with an optional pinned goal. */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["CreateThread"];
                };
            };
            responses: {
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Thread"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A user key naming another user */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description `conflict`: the user's data is being erased (retry when the erasure has completed); `quota_exceeded`: the user has limits.max_threads_per_user threads */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description goal over limits.max_text_bytes */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited (Retry-After) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/threads/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The thread's working memory: pinned goal, summary, and one page of its
         *     messages (the newest `limit`, default and at most 200; `before` pages
         *     back, `include_compacted` through the whole history).
         */
        get: {
            parameters: {
                query?: {
                    /** @description Messages per page, 1 to 200 (default 200). */
                    limit?: number;
                    /** @description Only messages with a `seq` below this (the previous page's `next_before`). */
                    before?: number;
                    /**
                     * @description Page through compacted messages too (the whole history); by default
                     *     only the working memory.
                     */
                    include_compacted?: boolean;
                };
                header?: never;
                path: {
                    /** @description Thread id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ThreadView"];
                    };
                };
                /** @description limit outside 1..=200, or an unknown parameter */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited (Retry-After) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/threads/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Append a message (agents running their own model). Tool results are kept
         *     as a compact summary with a pointer to the full payload. A user message
         *     schedules extraction of candidate memories.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Thread id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["AppendMessage"];
                };
            };
            responses: {
                /** @description Stored */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Message"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/threads/{id}/payloads/{payload_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A tool result's full payload. */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Thread id */
                    id: string;
                    /** @description Payload id from a tool summary */
                    payload_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The payload as stored */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Invalid input: a malformed parameter or body (`invalid_argument`) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/threads/{id}/prompt": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Assemble the prompt for the next message without calling a model: system
         *     instructions, pinned goal, summary, memories (within the budget share of
         *     `model_context_tokens`), recent turns and the message, with a token
         *     breakdown. Nothing is stored.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Thread id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["PromptRequest"];
                };
            };
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["PromptResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Overloaded (Retry-After) */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/threads/{id}/turns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run a turn with the configured model: the user's message is stored first
         *     (and kept if the model fails), then the reply; extraction follows in the
         *     background.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Thread id */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["TurnRequest"];
                };
            };
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["TurnReply"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A turn is already running in this thread */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Too large: the body is over the request body limit, or a text over `limits.max_text_bytes` bytes (`payload_too_large`) */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description `rate_limited` (Retry-After): this key's rate limit, or the user's limits.model_calls_per_user_per_minute (the user's message is stored) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description The model endpoint failed */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description No model configured */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The users this key may see: a user key itself; an agent or admin key the
         *     users of its tenant (from their memories, read in id pages, and from the
         *     tenant's user keys).
         */
        get: {
            parameters: {
                query?: {
                    /** @description `next_cursor` of the previous call: the scan goes on from there. */
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["UsersResponse"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Erase a user's memories, threads, history, index entries and cached
         *     embeddings. Idempotent: a DELETE while the user's erasure runs joins it.
         */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description User id */
                    user_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Erased; the receipt counts what was removed */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErasureReceipt"];
                    };
                };
                /** @description Recorded and running; it completes whatever the client does. Follow `status_url` (also in `Location`) */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErasureAccepted"];
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A user key naming another user */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited (Retry-After) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description The erasure failed and stays recorded; it is retried automatically */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user_id}/erasure": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Verify an erasure: what every store still holds of the user (all zero,
         *     `erased: true`, `status: erased`, after `DELETE /v1/users/{user_id}`);
         *     `status: in_progress` while it runs.
         */
        get: {
            parameters: {
                query?: {
                    /**
                     * @description Admin keys, embedded deployment: also scan every file of the data
                     *     directory for the user's id and owner key (reads the whole directory;
                     *     one scan at a time).
                     */
                    files?: boolean;
                };
                header?: never;
                path: {
                    /** @description User id */
                    user_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Counts per store (and the file scan with `files=true`) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErasureVerification"];
                    };
                };
                /** @description Invalid input, or `files=true` where the data directory does not hold the stores */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A user key naming another user; `files=true` without an admin key */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited (Retry-After) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description `files=true` while another scan runs (Retry-After) */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user_id}/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export a user's memories (every status) with their audit history,
         *     threads, messages and tool payloads as JSON Lines; the last line is the
         *     manifest (counts, sha256, schema_version, embedding model). A response
         *     whose last line is not a manifest was cut short.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description User id */
                    user_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description JSON Lines, manifest last */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/x-ndjson": string;
                    };
                };
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description A user key naming another user, or an agent key when the policy forbids */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description The user is being erased */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user_id}/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Restore an export as this user of the key's tenant (admin keys only; any
         *     other key is refused before the body is read). The file is verified
         *     whole first (manifest sha256 and counts, every record's columns as the
         *     write path checks them, references within the file, no id of another
         *     user or tenant): a bad file writes nothing. A user who was erased is
         *     refused unless `allow_erased=true`. Ids, statuses, versions, timestamps
         *     and histories are kept, and each memory's history gains an `import`
         *     event; texts are embedded with this deployment's model and indexed.
         */
        post: {
            parameters: {
                query?: {
                    /**
                     * @description Erase the user's existing data first (with a receipt) instead of
                     *     refusing with 409.
                     */
                    replace?: boolean;
                    /**
                     * @description Import a user who was erased (forget-all) instead of refusing with
                     *     409: the data comes back, deliberately.
                     */
                    allow_erased?: boolean;
                };
                header?: never;
                path: {
                    /** @description User id */
                    user_id: string;
                };
                cookie?: never;
            };
            /** @description An export */
            requestBody: {
                content: {
                    "application/x-ndjson": string;
                };
            };
            responses: {
                /** @description Imported */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ImportReport"];
                    };
                };
                /** @description Not a valid export (hash, counts, records, references) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Not an admin key */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description The user has data (without replace), is being erased, was erased (without allow_erased), or the file names an id that exists under another user or tenant */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Over 1 GiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/whoami": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The presented key's tenant, role and user. */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["WhoAmI"];
                    };
                };
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
                /** @description Rate limited: this key is over the policy's limits.requests_per_second_per_key (Retry-After says when to retry) */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorBody"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description What a write did with one item (the memory lifecycle).
         * @enum {string}
         */
        AddOutcome: "created" | "reinforced" | "promoted" | "superseded";
        /**
         * @description Either `{"memories": [...]}` or one memory's fields at the top level;
         *     `refresh: true` makes them searchable before the response.
         */
        AddRequest: {
            /** Format: float */
            confidence?: number | null;
            /** Format: date-time */
            expires_at?: string | null;
            /** Format: float */
            importance?: number | null;
            kind?: null | components["schemas"]["Kind"];
            memories?: components["schemas"]["MemoryInput"][] | null;
            /** @description At most 65536 bytes as compact JSON and 8 levels deep (the object is level 1). */
            metadata?: Record<string, never> | null;
            refresh?: boolean;
            /** @description At most 32768 bytes of UTF-8. */
            text?: string | null;
            /** @description 1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane). */
            thread_id?: string | null;
            tier?: null | components["schemas"]["Tier"];
            /** @description 1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane). */
            user_id?: string | null;
        };
        AddResponse: {
            /** @description In request order. */
            ids: string[];
            memories: components["schemas"]["AddedMemory"][];
        };
        AddedMemory: {
            /**
             * Format: uuid
             * @description The memory that holds the item: the new one, or the stored memory it
             *     reinforced or promoted.
             */
            id: string;
            /** @description What the write did with the item. */
            outcome: components["schemas"]["AddOutcome"];
            /** @description `pending` when confidence was below the policy's threshold. */
            status: components["schemas"]["Status"];
            /**
             * Format: uuid
             * @description With `superseded`: the memory the item replaced.
             */
            superseded?: string | null;
            tier: components["schemas"]["Tier"];
        };
        AppendMessage: {
            /** @description At most 32768 bytes of UTF-8. */
            content?: string;
            role: components["schemas"]["MessageRole"];
            tool?: null | components["schemas"]["ToolResult"];
        };
        /**
         * @description What happened to a memory, for its history.
         * @enum {string}
         */
        AuditAction: "create" | "update" | "supersede" | "confirm" | "reject" | "reinforce" | "expire" | "archive" | "delete" | "restore" | "access" | "import";
        AuditEvent: {
            action: components["schemas"]["AuditAction"];
            /** @description Who did it: an API key id, `cli`, `system` (jobs). */
            actor: string;
            after_text?: string | null;
            /** Format: date-time */
            at: string;
            before_text?: string | null;
            details: Record<string, never>;
            /** Format: uuid */
            memory_id: string;
            tenant_id: string;
            user_id?: string | null;
        };
        /** @description A chat message, as agents send them. */
        ChatMessage: {
            content: string;
            role: string;
        };
        /** @description A ready-to-inject memory block. */
        ContextBlock: {
            budget_tokens: number;
            memories: components["schemas"]["ContextMemory"][];
            memory_ids: string[];
            /** @description The block's text; empty when no memory fits or none is relevant. */
            text: string;
            /** @description Tokens of `text`; never more than `budget_tokens`. */
            tokens: number;
        };
        /** @description One memory in the block. */
        ContextMemory: {
            /** Format: date-time */
            created_at: string;
            /** Format: uuid */
            id: string;
            kind: components["schemas"]["Kind"];
            /** Format: float */
            score: number;
            text: string;
            tier: components["schemas"]["Tier"];
        };
        ContextRequest: {
            /**
             * Format: double
             * @description Share of the window the memory block may use (policy default 0.10).
             */
            budget_fraction?: number | null;
            /** @description The conversation so far; the last user message becomes the query. */
            messages?: components["schemas"]["ChatMessage"][] | null;
            /** @description The model's context window, in tokens. */
            model_context_tokens: number;
            /**
             * @description What to find memories for; or give `messages`.
             *     At most 32768 bytes of UTF-8.
             */
            query?: string | null;
            /** @description 1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane). */
            thread_id?: string | null;
            /**
             * @description Required unless the key is bound to a user.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            user_id?: string | null;
        } | unknown | unknown;
        CreateKey: {
            /**
             * @description `admin`, `agent` or `user`.
             * @enum {string}
             */
            role: "admin" | "agent" | "user";
            /**
             * @description Required for `user` keys, optional for `agent`, refused for `admin`.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            user_id?: string | null;
        };
        CreateThread: {
            /**
             * @description Pinned: always in the prompt, never compacted.
             *     At most 32768 bytes of UTF-8.
             */
            goal?: string | null;
            /**
             * @description Required unless the key is bound to a user.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            user_id?: string | null;
        };
        CreatedKey: {
            key: components["schemas"]["KeyView"];
            /** @description The secret, shown this once: only its SHA-256 is stored. */
            secret: string;
        };
        DeleteResponse: {
            /** Format: uuid */
            id: string;
            status: components["schemas"]["Status"];
        };
        /** @description A document to ingest; the same `document_id` again replaces its chunks. */
        DocumentBody: {
            /** Format: date-time */
            created_at?: string | null;
            /**
             * @description Stable id; generated when absent.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            document_id?: string | null;
            /** Format: float */
            importance?: number | null;
            /** @description At most 65536 bytes as compact JSON and 8 levels deep (the object is level 1). */
            metadata?: Record<string, never>;
            text: string;
            title?: string | null;
        };
        DocumentDeleted: {
            deleted_chunks: number;
            document_id: string;
        };
        DocumentResponse: {
            /** @description The reference memories the document was split into. */
            chunk_ids: string[];
            document_id: string;
            /** @description Chunks of an earlier version of the same document, now deleted. */
            replaced_chunks: number;
        };
        DryRunResponse: {
            /**
             * @description The listed changes that concern this tenant (a dry run lists at most
             *     1,000 changes in all).
             */
            changes: components["schemas"]["PreviewChange"][];
            /** @description Action → memories it would change, in every tenant. */
            counts: Record<string, never>;
            /** Format: int64 */
            elapsed_ms: number;
            job: string;
            /**
             * Format: int64
             * @description Memories read, in every tenant.
             */
            scanned: number;
        };
        /** @description What an erasure removed, store by store. */
        ErasedCounts: {
            /**
             * Format: int64
             * @description API keys bound to the user, deleted (none authenticates any more; no
             *     key row keeps the user id).
             */
            api_keys?: number;
            /** Format: int64 */
            audit_events: number;
            /** Format: int64 */
            cached_embeddings: number;
            /** Format: int64 */
            candidates: number;
            /** Format: int64 */
            lexical_docs: number;
            /** Format: int64 */
            memories: number;
            /** Format: int64 */
            messages: number;
            /** Format: int64 */
            threads: number;
            /** Format: int64 */
            vectors: number;
        };
        /** @description An erasure still running when the DELETE answered (202). */
        ErasureAccepted: {
            /** @description Always `in_progress`. */
            status: components["schemas"]["ErasureStatus"];
            /** @description Where to follow it: `GET` answers `status: erased` once it is done. */
            status_url: string;
            user_id: string;
        };
        /** @description Returned by a completed erasure. */
        ErasureReceipt: {
            /** Format: date-time */
            completed_at: string;
            erased: components["schemas"]["ErasedCounts"];
            user_id: string;
        };
        /**
         * @description Where a user's erasure stands.
         * @enum {string}
         */
        ErasureStatus: "in_progress" | "erased" | "not_erased";
        /** @description What every store still holds of a user: all zero after an erasure. */
        ErasureVerification: {
            /**
             * Format: int64
             * @description API key rows bound to the user (revoked ones included).
             */
            api_keys?: number;
            /** Format: int64 */
            audit_events: number;
            /**
             * @description True when every count is zero, no erasure is in progress and every
             *     live node has applied the erasure.
             */
            erased: boolean;
            files?: null | components["schemas"]["ResidueReport"];
            /**
             * Format: date-time
             * @description When the last erasure of this user completed, if any; kept for
             *     [`ERASURE_TOMBSTONE_RETENTION`], then scrubbed from the tombstone.
             */
            last_erasure_at?: string | null;
            /** Format: int64 */
            lexical_docs: number;
            /**
             * Format: int64
             * @description Clustered mode: the nodes following the store's change feed that are
             *     alive (0 on a single node, which has no followers).
             */
            live_nodes: number;
            /** Format: int64 */
            memories: number;
            /** Format: int64 */
            messages: number;
            /**
             * @description Live nodes that have not yet applied the user's latest erasure to
             *     their own lexical index.
             */
            nodes_behind: string[];
            pending_erasure: boolean;
            /**
             * @description `in_progress` until the erasure has finished on every live node, then
             *     `erased`; `not_erased` when no erasure runs and data is present.
             */
            status: components["schemas"]["ErasureStatus"];
            /**
             * Format: int64
             * @description Threads, and their messages with tool payloads.
             */
            threads: number;
            user_id: string;
            /** Format: int64 */
            vectors: number;
        };
        /** @description The body of every error response. */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        ErrorDetail: {
            /**
             * @description One of: invalid_argument, payload_too_large, not_found, conflict,
             *     quota_exceeded, unauthenticated, forbidden, rate_limited, overloaded,
             *     unavailable, bad_gateway, invalid_configuration, internal.
             */
            code: string;
            /** @description The request field the error is about, when there is one. */
            field?: string | null;
            message: string;
        };
        EvalJob: {
            /** @description Why it failed, when it did. */
            error?: string | null;
            /** Format: date-time */
            finished_at?: string | null;
            /** Format: uuid */
            id: string;
            /** @description Where the reports were written on the server. */
            out_dir?: string | null;
            /** @description `report.json`'s content once succeeded. */
            report: Record<string, never>;
            sets: string[];
            /** Format: date-time */
            started_at: string;
            status: components["schemas"]["EvalStatus"];
        };
        EvalReportSummary: {
            comparisons: Record<string, never>;
            /**
             * Format: date-time
             * @description When `report.json` was written.
             */
            finished_at?: string | null;
            /** Format: uuid */
            id: string;
            runs: components["schemas"]["EvalRunSummary"][];
        };
        EvalRequest: {
            /** @description Two labels to compare (default: the first two runs). */
            compare?: string[] | null;
            /** @description Dotted path into corpus lines for group-level metrics. */
            group_by?: string | null;
            /** @description Recall cut-offs (default 1, 5, 10, 20). */
            k?: number[] | null;
            /** @description Built-in presets (default: all five). */
            presets?: string[];
            /** @description Set directories, relative to the server's evaluation root. */
            sets: string[];
        };
        EvalRunSummary: {
            /** @description Metric → value (nDCG@10, recall@k, MRR@10, …). */
            metrics: Record<string, never>;
            preset: string;
            queries: number;
            set: string;
        };
        /** @enum {string} */
        EvalStatus: "running" | "succeeded" | "failed";
        EvalsResponse: {
            /** @description Newest first. */
            reports: components["schemas"]["EvalReportSummary"][];
            /** @description Set names `POST /v1/evals` accepts (directories under the evaluation root). */
            sets: string[];
        };
        /**
         * @description Where a message is in extraction. Only user messages are extracted; the
         *     others are `skipped` from the start.
         * @enum {string}
         */
        ExtractionState: "pending" | "running" | "done" | "skipped";
        Health: {
            /** @description Per component (`store`, `indexes`, `embedder`): `ok` or what is wrong. */
            checks?: {
                [key: string]: string;
            };
            details?: null | components["schemas"]["ReadyDetails"];
            index_lag?: null | components["schemas"]["IndexLag"];
            /** @description `ok`, `ready` or `not_ready`. */
            status: string;
        };
        HistoryResponse: {
            /** @description Oldest first: what happened, by which key (`actor`), when. */
            events: components["schemas"]["AuditEvent"][];
        };
        /** @description What an import wrote. */
        ImportReport: {
            /** @description Records per type, as verified against the manifest. */
            counts: {
                [key: string]: number;
            };
            /** @description Active and pending memories embedded and indexed. */
            indexed: number;
            /**
             * @description The export's model differs from this deployment's (the texts were
             *     embedded with this deployment's model either way).
             */
            model_changed: boolean;
            replaced?: null | components["schemas"]["ErasureReceipt"];
            /**
             * Format: int64
             * @description Rows written to the store.
             */
            rows_written: number;
            user_id: string;
        };
        IndexHealth: {
            /**
             * Format: int64
             * @description The store's change-feed position (clustered mode follows it).
             */
            change_feed_head: number;
            embedding_model: string;
            /**
             * Format: int64
             * @description Texts waiting for an embedding slot.
             */
            embedding_queue_depth: number;
            /** Format: int64 */
            lexical_docs: number;
            /**
             * Format: int64
             * @description `store_indexed − lexical_docs` (positive: the lexical index is behind).
             */
            lexical_lag: number;
            /** @description Memories by tier and status, every tenant. */
            memories: Record<string, never>;
            /**
             * Format: int64
             * @description Memories the indexes should hold (active and pending, every tenant).
             */
            store_indexed: number;
            /**
             * Format: int64
             * @description `store_indexed − vector_points`.
             */
            vector_lag: number;
            /** Format: int64 */
            vector_points: number;
        };
        /** @description What `/readyz` reports of the indexes. */
        IndexLag: {
            /**
             * Format: int64
             * @description Change-feed positions not yet checked against the indexes.
             */
            changes: number;
            /** @description The last failed repair run's error, if any run failed. */
            last_failure?: string | null;
            /** Format: date-time */
            last_failure_at?: string | null;
            /** @description Whether the repair loop runs in this process. */
            repairing: boolean;
            /**
             * Format: double
             * @description How long the oldest of them has waited, in seconds (0 when none).
             */
            seconds: number;
        };
        JobView: {
            /**
             * Format: date-time
             * @description Before any run has completed: when the first run is due (the weekly
             *     cleanup records it at the service's first start, one interval later);
             *     `null` when not recorded.
             */
            first_due_at?: string | null;
            /** Format: int64 */
            interval_secs: number;
            /** @description `ttl-sweep` or `weekly-cleanup`. */
            job: string;
            /** Format: date-time */
            last_completed_at?: string | null;
            /**
             * @description The last run's counters (`scanned`, `counts`, `elapsed_ms`, …);
             *     `null` before the first run.
             */
            last_stats?: Record<string, never> | null;
            /** Format: date-time */
            lease_expires_at?: string | null;
            /** @description A runner holds an unexpired lease. */
            running: boolean;
        };
        JobsResponse: {
            jobs: components["schemas"]["JobView"][];
        };
        /** @description A stored key as the API shows it: never the secret or its hash. */
        KeyView: {
            /** Format: date-time */
            created_at: string;
            id: string;
            /** Format: date-time */
            revoked_at?: string | null;
            /** @description `admin`, `agent` or `user`. */
            role: string;
            tenant_id: string;
            user_id?: string | null;
        };
        KeysResponse: {
            /** @description The tenant's keys, revoked ones included, oldest first. */
            keys: components["schemas"]["KeyView"][];
        };
        /**
         * @description What sort of thing a memory states. Half-lives and TTLs can differ per kind.
         * @enum {string}
         */
        Kind: "preference" | "fact" | "event" | "instruction" | "document" | "message" | "summary";
        /** @description One kind or several. */
        KindFilter: components["schemas"]["Kind"] | components["schemas"]["Kind"][];
        /**
         * @description What the stage saw in one hit and what each feature added to its
         *     log-odds (part of its `ScoreBreakdown`).
         */
        LearnedSignals: {
            /**
             * Format: float
             * @description The model's bias (log-odds before any feature).
             */
            bias: number;
            /** @description weight × value, by name (features that add nothing are left out). */
            contributions: {
                [key: string]: number;
            };
            /** @description Each feature's value, by name. */
            features: {
                [key: string]: number;
            };
            /**
             * Format: float
             * @description σ(bias + Σ contributions): the hit's probability of relevance.
             */
            relevance: number;
        };
        LineageResponse: {
            /**
             * @description Every version of the fact this key may read, oldest first: what it
             *     replaced, the memory itself, what replaced it.
             */
            memories: components["schemas"]["Memory"][];
        };
        ListResponse: {
            /** @description In creation order. */
            memories: components["schemas"]["Memory"][];
            /** @description Present when there may be more: pass it as `cursor`. */
            next_cursor?: string | null;
        };
        /** @description A stored memory. The SQL store holds the authoritative copy. */
        Memory: {
            /** Format: int64 */
            access_count: number;
            /** Format: float */
            confidence: number;
            /** Format: date-time */
            created_at: string;
            /** @description The model whose vector indexes this memory's text. */
            embedding_model?: string | null;
            /** Format: date-time */
            expires_at?: string | null;
            /** Format: uuid */
            id: string;
            /** Format: float */
            importance: number;
            kind: components["schemas"]["Kind"];
            /** Format: date-time */
            last_accessed_at?: string | null;
            metadata: Record<string, never>;
            source: components["schemas"]["Source"];
            status: components["schemas"]["Status"];
            /** Format: uuid */
            superseded_by?: string | null;
            /**
             * Format: uuid
             * @description The memory this one replaced, for corrections.
             */
            supersedes?: string | null;
            tenant_id: string;
            text: string;
            /** @description Working memory belongs to a thread; other tiers may record one. */
            thread_id?: string | null;
            tier: components["schemas"]["Tier"];
            /** Format: date-time */
            updated_at: string;
            /** @description Absent for reference memory, required otherwise. */
            user_id?: string | null;
            /**
             * Format: int64
             * @description Bumped by every change; the indexes record it to detect stale entries.
             */
            version: number;
        };
        /** @description One memory to add. */
        MemoryInput: {
            /**
             * Format: float
             * @description 0..=1; below the policy's threshold the memory is `pending`.
             */
            confidence?: number | null;
            /** Format: date-time */
            expires_at?: string | null;
            /**
             * Format: float
             * @description 0..=1; the policy default when absent.
             */
            importance?: number | null;
            kind?: null | components["schemas"]["Kind"];
            /**
             * @description Any JSON object: at most `limits.max_metadata_bytes` bytes as compact
             *     JSON (64 KiB) and `limits.max_metadata_depth` levels deep (8; the
             *     object is level 1).
             *     At most 65536 bytes as compact JSON and 8 levels deep (the object is level 1).
             */
            metadata?: Record<string, never>;
            /**
             * @description At most `limits.max_text_bytes` bytes (policy; 32 KiB by default).
             *     At most 32768 bytes of UTF-8.
             */
            text: string;
            /**
             * @description Required for working memory. Same characters as `user_id`.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            thread_id?: string | null;
            tier?: null | components["schemas"]["Tier"];
            /**
             * @description Required for working and long-term memory (a user key fills in its own);
             *     absent for reference memory. 1–256 bytes of UTF-8, any script, no
             *     control, format (zero-width, bidi control) or separator characters.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            user_id?: string | null;
        };
        /** @description A stored message. */
        Message: {
            compacted: boolean;
            content: string;
            /** Format: date-time */
            created_at: string;
            extraction_state: components["schemas"]["ExtractionState"];
            role: components["schemas"]["MessageRole"];
            /**
             * Format: int64
             * @description Store-wide sequence number: the order of messages in a thread.
             */
            seq: number;
            /** Format: uuid */
            thread_id: string;
            tool?: null | components["schemas"]["ToolSummary"];
        };
        /** @enum {string} */
        MessageRole: "user" | "assistant" | "tool";
        /**
         * @description A change; absent fields are left as they are. `expires_at: null` clears
         *     the expiry. A text change re-embeds and re-indexes the memory.
         */
        PatchRequest: {
            /** Format: date-time */
            expires_at?: string | null;
            /** Format: float */
            importance?: number | null;
            /** @description At most 65536 bytes as compact JSON and 8 levels deep (the object is level 1). */
            metadata?: Record<string, never> | null;
            refresh?: boolean;
            /** @description At most 32768 bytes of UTF-8. */
            text?: string | null;
        } | unknown | unknown | unknown | unknown;
        /** @description The policy in force, as JSON and as the TOML a policy file would hold. */
        PolicyResponse: {
            policy: Record<string, never>;
            toml: string;
        };
        PreviewChange: {
            action: string;
            detail: string;
            /** Format: uuid */
            id: string;
        };
        PromptRequest: {
            /** @description At most 32768 bytes of UTF-8. */
            message: string;
            /** @description The window of the model the prompt is for, in tokens. */
            model_context_tokens: number;
        };
        /** @description An assembled prompt, ready to send to any chat model. */
        PromptResponse: {
            memory_ids: string[];
            messages: components["schemas"]["ChatMessage"][];
            tokens: components["schemas"]["TokenBreakdown"];
        };
        /**
         * @description `/readyz`'s details: conditions an operator should see that do not take
         *     the node out of rotation.
         */
        ReadyDetails: {
            /**
             * @description The store's upkeep: SQLite WAL checkpoints that gave up within their
             *     time bound (`last_checkpoint_complete: false` while the last one
             *     did), and erasure purges that fell back to a whole-database VACUUM.
             */
            store: components["schemas"]["UpkeepStatus"];
        };
        /** @description What the second stage saw in one hit (part of its `ScoreBreakdown`). */
        RerankSignals: {
            /**
             * Format: float
             * @description The multiplier the stage applied to the score.
             */
            factor: number;
            /** @description A newer memory of the same owner matches the same query terms. */
            older_duplicate: boolean;
            /**
             * Format: float
             * @description Share (idf-weighted) of the query's adjacent term pairs found
             *     adjacent in the memory, 0..=1.
             */
            phrase: number;
        };
        /** @description A file holding at least one needle. */
        ResidueHit: {
            /** @description The labels of the needles found in it. */
            found: string[];
            /** @description Relative to the data directory. */
            path: string;
            store: components["schemas"]["StoreFiles"];
        };
        /** @description The result of a scan. */
        ResidueReport: {
            /** @description No file holds any needle. */
            clean: boolean;
            hits: components["schemas"]["ResidueHit"][];
            /** @description The needle labels searched for. */
            searched_for: string[];
            stores: components["schemas"]["StoreResidue"][];
        };
        /** @description Why a hit scored what it did. */
        ScoreBreakdown: {
            /**
             * Format: float
             * @description What each leg added to `fused_score` after normalisation within the
             *     query's candidates and weighting (they sum to `fused_score`).
             */
            bm25_contribution?: number | null;
            /**
             * Format: float
             * @description `absolute` fusion's unit of the lexical leg: the BM25 score of a full
             *     match of the query (Σ idf over its terms). Admin keys only.
             */
            bm25_full_match_score?: number | null;
            /** @description The lexical leg's rank (absent: not a BM25 candidate). */
            bm25_rank?: number | null;
            /**
             * Format: float
             * @description The lexical leg's raw BM25 score (admin keys only: its idf is the
             *     whole index's, every tenant's, see [`ScoreBreakdown::for_non_admin`]).
             */
            bm25_score?: number | null;
            context?: null | components["schemas"]["TurnContext"];
            /** Format: float */
            decay_factor: number;
            /**
             * Format: float
             * @description With the learned stage, its probability of relevance; without it,
             *     fused · decay · importance · temporal (· the second stage's factor);
             *     or the score a neighbouring turn lent it when that is higher.
             */
            final_score: number;
            /** Format: float */
            fused_score: number;
            /** Format: float */
            importance_factor: number;
            learned?: null | components["schemas"]["LearnedSignals"];
            rerank?: null | components["schemas"]["RerankSignals"];
            temporal?: null | components["schemas"]["TemporalSignal"];
            /**
             * Format: float
             * @description `absolute` fusion's background cosine for this query in its scope
             *     (the median of the vector index's nearest neighbours, present when
             *     the scope holds at least as many memories as the leg asked for):
             *     with the candidate floor, the vector leg's zero when above the
             *     model's `unrelated_cosine`.
             */
            vector_background?: number | null;
            /**
             * Format: float
             * @description `absolute` fusion's confidence in the vector leg for this query (the
             *     share of its tokens the model knows), which multiplied its weight.
             */
            vector_confidence?: number | null;
            /** Format: float */
            vector_contribution?: number | null;
            vector_rank?: number | null;
            /**
             * Format: float
             * @description How much `vector_similarity` was raised because the memory is in
             *     another script than the query (`[embedding.<model>]
             *     cross_script_shift_*`); `vector_similarity` includes it, the model's
             *     own cosine is the difference. Absent when 0.
             */
            vector_script_shift?: number | null;
            /**
             * Format: float
             * @description The vector leg's raw cosine similarity and rank.
             */
            vector_similarity?: number | null;
        };
        SearchBody: {
            /** @description Include each hit's score breakdown. */
            explain?: boolean;
            filters?: components["schemas"]["SearchFilters"];
            /** @description Also return memories awaiting confirmation. */
            include_pending?: boolean;
            /** @description At most 32768 bytes of UTF-8. */
            query: string;
            /**
             * @description Working memory is searched only for this thread.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            thread_id?: string | null;
            /** @description Default: every tier. */
            tiers?: components["schemas"]["Tier"][] | null;
            /** @description Default and maximum from the policy. */
            top_k?: number | null;
            /**
             * @description Whose memories; a user key fills in its own.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            user_id?: string | null;
        };
        SearchFilters: {
            /**
             * Format: date-time
             * @description Inclusive lower bound on `created_at`.
             */
            created_after?: string | null;
            /**
             * Format: date-time
             * @description Exclusive upper bound on `created_at`.
             */
            created_before?: string | null;
            kind?: null | components["schemas"]["KindFilter"];
            /** @description Equality on metadata keys (all must match). */
            metadata?: Record<string, never>;
        };
        SearchHit: {
            breakdown?: null | components["schemas"]["ScoreBreakdown"];
            memory: components["schemas"]["Memory"];
            /** Format: float */
            score: number;
        };
        SearchResponse: {
            /**
             * Format: double
             * @description Time spent embedding the query.
             */
            embed_ms: number;
            /** @description Best first. */
            hits: components["schemas"]["SearchHit"][];
            /** Format: double */
            took_ms: number;
        };
        /** @description Where a memory came from: a thread and message, a document, an import. */
        Source: {
            /** Format: int32 */
            chunk_index?: number | null;
            document_id?: string | null;
            message_id?: string | null;
            thread_id?: string | null;
        };
        /**
         * @description Where a memory is in its life. Only `active` (and, on request, `pending`)
         *     memories are retrievable; the search indexes hold nothing else.
         * @enum {string}
         */
        Status: "active" | "pending" | "superseded" | "expired" | "archived" | "deleted";
        /**
         * @description Which store a file belongs to, by its place in the data directory.
         * @enum {string}
         */
        StoreFiles: "store" | "lexical" | "vectors" | "other";
        /** @description What one store's files hold. */
        StoreResidue: {
            /** Format: int64 */
            bytes_scanned: number;
            /** Format: int64 */
            files_scanned: number;
            /**
             * Format: int64
             * @description Files holding a needle.
             */
            files_with_residue: number;
            store: components["schemas"]["StoreFiles"];
        };
        /** @description What the compacted part of a thread said. */
        Summary: {
            /**
             * @description Explicit promises ("I will…", "我会…").
             * @default []
             */
            commitments: string[];
            /**
             * @description Things still to do, as said in the conversation.
             * @default []
             */
            open_todos: string[];
            /** @default  */
            text: string;
        };
        SupersedeRequest: {
            /**
             * @description The corrected statement.
             *     At most 32768 bytes of UTF-8.
             */
            text: string;
        };
        SupersedeResponse: {
            /** @description The new memory. */
            memory: components["schemas"]["Memory"];
            /**
             * Format: uuid
             * @description The memory it replaced, now `superseded`.
             */
            superseded: string;
        };
        /** @description What the temporal signal did to a hit (`breakdown.temporal`). */
        TemporalSignal: {
            /**
             * Format: float
             * @description The factor applied to the score: 1 + weight in the window, else 1.
             */
            factor: number;
            /** @description Whether this memory was created in the window. */
            in_window: boolean;
            /** @description The words of the query that named a time. */
            phrase: string;
            /**
             * Format: date-time
             * @description The window of creation times favoured: the named period's start…
             */
            start: string;
            /**
             * Format: date-time
             * @description …and its end plus the telling lag (exclusive).
             */
            until: string;
        };
        /** @description A conversation of one user. */
        Thread: {
            /** Format: date-time */
            created_at: string;
            /** @description Pinned: always in the prompt, never compacted. */
            goal?: string | null;
            /** Format: uuid */
            id: string;
            /** Format: date-time */
            last_activity_at: string;
            /** Format: date-time */
            last_compacted_at?: string | null;
            summary: components["schemas"]["Summary"];
            /**
             * Format: int64
             * @description The summary covers the messages up to this seq (0 = none).
             */
            summary_upto_seq: number;
            tenant_id: string;
            /** Format: date-time */
            updated_at: string;
            user_id: string;
        };
        /** @description A thread's working memory: goal, summary and one page of its messages. */
        ThreadView: components["schemas"]["Thread"] & {
            /** @description Messages folded into the summary. */
            compacted_messages: number;
            /**
             * @description The page: the newest `limit` messages older than `before` (all
             *     uncompacted ones unless `include_compacted`), oldest first.
             */
            messages: components["schemas"]["Message"][];
            /**
             * Format: int64
             * @description Pass as `before` for the next, older page; absent on the last page.
             */
            next_before?: number | null;
        };
        /**
         * @description The three tiers of memory.
         * @enum {string}
         */
        Tier: "working" | "long_term" | "reference";
        /** @description Where the prompt's tokens went. */
        TokenBreakdown: {
            budget_memories: number;
            goal: number;
            history: number;
            memories: number;
            message: number;
            summary: number;
            system: number;
            total: number;
        };
        /**
         * @description A tool's result as an agent reports it. The history keeps `status`, the
         *     one-line `summary` and `key_fields`; `payload` is stored apart and only
         *     pointed to.
         */
        ToolResult: {
            key_fields?: Record<string, never>;
            /** @description 1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane). */
            name: string;
            /** @description The full result (any JSON); defaults to the message's content. */
            payload?: Record<string, never> | null;
            /**
             * @description e.g. `ok`, `error`.
             *     1 to 256 bytes of UTF-8, any script; no control, format (zero-width, bidi control, tag), separator or noncharacter code points (`pattern` lists those of the Basic Multilingual Plane).
             */
            status: string;
            /** @description One line; defaults to the first line of the message's content. */
            summary?: string | null;
        };
        /**
         * @description A tool result as it enters the history: status, a one-line summary and
         *     key fields, with a pointer to the full payload (stored apart).
         */
        ToolSummary: {
            key_fields?: Record<string, never>;
            name: string;
            /**
             * Format: uuid
             * @description Id of the full payload (`GET /v1/threads/{id}/payloads/{payload_id}`).
             */
            payload_id?: string | null;
            status: string;
            summary: string;
        };
        /**
         * @description Why a hit holds its score through conversation context (part of its
         *     `ScoreBreakdown`).
         */
        TurnContext: {
            /**
             * Format: uuid
             * @description The hit this turn is beside, which lent it its score.
             */
            beside: string;
            /**
             * Format: float
             * @description The score lent: `weight` × that hit's score.
             */
            lent_score: number;
        };
        TurnReply: {
            memory_ids: string[];
            model: string;
            reply: components["schemas"]["Message"];
            tokens: components["schemas"]["TokenBreakdown"];
            user_message: components["schemas"]["Message"];
        };
        TurnRequest: {
            /** Format: int32 */
            max_tokens?: number | null;
            /** @description At most 32768 bytes of UTF-8. */
            message: string;
            /** Format: float */
            temperature?: number | null;
        };
        /** @description [`Upkeep`]'s counts (all zero on PostgreSQL, which owns its WAL). */
        UpkeepStatus: {
            /**
             * Format: int64
             * @description SQLite WAL checkpoints run by this process (start, erasures, close).
             */
            checkpoints: number;
            /**
             * Format: int64
             * @description Of those, the ones whose `TRUNCATE` did not complete within its time
             *     bound (a long reader in another process: a backup, a `sqlite3`
             *     shell); the WAL was copied as far as a `PASSIVE` checkpoint could and
             *     the next checkpoint completes it.
             */
            checkpoints_incomplete: number;
            /** @description Whether the last checkpoint completed (none yet: absent). */
            last_checkpoint_complete?: boolean | null;
            /**
             * Format: int64
             * @description Erasure purges that fell back to a `VACUUM` of the whole database
             *     (this SQLite has no `sqlite_dbpage`, or the scrub could not vouch for
             *     the file): every other write waited for the rewrite.
             */
            purge_vacuum_fallbacks: number;
        };
        UserEntry: {
            /** @description The user has an API key of its own. */
            has_key: boolean;
            /**
             * Format: int64
             * @description Memories of this user in the part of the store this call read.
             */
            memories_seen: number;
            user_id: string;
        };
        UsersResponse: {
            /**
             * @description Present when the tenant holds more memories than one call reads
             *     (`USERS_SCAN_BUDGET`): pass it as `cursor` to find further users.
             */
            next_cursor?: string | null;
            /** @description Memories read by this call. */
            scanned: number;
            /** @description Sorted by user id. */
            users: components["schemas"]["UserEntry"][];
        };
        /** @description Who the presented key is. */
        WhoAmI: {
            /** @description The server runs with `--insecure-dev` (keyless requests act as admin). */
            insecure_dev: boolean;
            key_id: string;
            /** @description `admin`, `agent` or `user`: a key bound to a user acts as `user`. */
            role: string;
            tenant_id: string;
            /** @description The user a bound key acts for. */
            user_id?: string | null;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
