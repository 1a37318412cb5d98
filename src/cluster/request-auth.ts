// Who may read the daemon's /flows from elsewhere than the node itself: the bearer token is checked with the
// API server as kube-rbac-proxy does it (a TokenReview says whose it is, a SubjectAccessReview whether that
// user may `get` the non-resource path, so access is granted by RBAC: `nonResourceURLs: ["/flows"]`,
// `verbs: ["get"]`). RBAC for the daemon: create on tokenreviews and subjectaccessreviews.

import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { sha256 } from '../model/index.js';

export type Decision =
  | { readonly allowed: true; readonly user: string }
  | { readonly allowed: false; readonly why: 'unauthenticated' | 'forbidden'; readonly message: string };

/** The two reviews, as the API server answers them. */
export interface Reviews {
  /** The user the token belongs to, or undefined when the API server does not know it. */
  authenticate(token: string): Promise<{ readonly user: string; readonly groups: readonly string[]; readonly uid?: string } | undefined>;
  allowed(
    user: { readonly user: string; readonly groups: readonly string[]; readonly uid?: string },
    verb: string,
    path: string,
  ): Promise<boolean>;
}

export interface RequestAuthOptions {
  readonly reviews: Reviews;
  readonly now: () => number;
  /** How long a decision is reused (kube-rbac-proxy caches reviews too): a flood of one token is one review. */
  readonly ttlMs?: number;
  /** Decisions remembered at most (the oldest go first): random tokens cannot grow the cache without bound. */
  readonly maxEntries?: number;
}

/**
 * A token and a path to a decision, reviewed by the API server and remembered for `ttlMs`. An API server that
 * cannot be asked rejects (the caller refuses the request: fail closed); that is not remembered.
 */
export function requestAuthorizer(
  opts: RequestAuthOptions,
): (token: string | undefined, request: { verb: string; path: string }) => Promise<Decision> {
  const ttlMs = opts.ttlMs ?? 30_000;
  const maxEntries = opts.maxEntries ?? 1_000;
  const cache = new Map<string, { readonly at: number; readonly decision: Promise<Decision> }>();
  return (token, { verb, path }) => {
    if (token === undefined)
      return Promise.resolve({
        allowed: false,
        why: 'unauthenticated',
        // The API server's pod proxy forwards no credentials, so `why --live` and `drops --kubeconfig` end here.
        message: `${path} from off the node needs a bearer token for a user RBAC lets get ${path}; or read it on the node: kubectl -n kube-system exec ds/netfence -- netfence drops`,
      });
    // The token itself is never kept: only its hash, as the key.
    const key = `${sha256(token, 'hex')} ${verb} ${path}`;
    const now = opts.now();
    const hit = cache.get(key);
    if (hit && now - hit.at < ttlMs) return hit.decision;
    cache.delete(key);
    const decision = review(opts.reviews, token, verb, path);
    cache.set(key, { at: now, decision });
    if (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
    decision.catch(() => cache.delete(key));
    return decision;
  };
}

async function review(reviews: Reviews, token: string, verb: string, path: string): Promise<Decision> {
  const user = await reviews.authenticate(token);
  if (!user) return { allowed: false, why: 'unauthenticated', message: 'the API server does not know this token' };
  if (await reviews.allowed(user, verb, path)) return { allowed: true, user: user.user };
  return {
    allowed: false,
    why: 'forbidden',
    message: `${user.user} may not ${verb} ${path} (RBAC: nonResourceURLs ["${path}"], verbs ["${verb}"])`,
  };
}

/** The reviews through client-node. */
export function kubeReviews(kubeConfig: KubeConfig): Reviews {
  const authn = kubeConfig.makeApiClient(AuthenticationV1Api);
  const authz = kubeConfig.makeApiClient(AuthorizationV1Api);
  return {
    async authenticate(token) {
      const answer = await authn.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      });
      const status = answer.status;
      if (status?.authenticated !== true || !status.user?.username) return undefined;
      return { user: status.user.username, groups: status.user.groups ?? [], ...(status.user.uid ? { uid: status.user.uid } : {}) };
    },
    async allowed(user, verb, path) {
      const answer = await authz.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.user,
            groups: [...user.groups],
            ...(user.uid ? { uid: user.uid } : {}),
            nonResourceAttributes: { verb, path },
          },
        },
      });
      return answer.status?.allowed === true && answer.status.denied !== true;
    },
  };
}
