// The admin JSON API, authenticated by the HttpOnly cookie the login form set. A 401 means the cookie is
// gone or the token changed: reload, and the server answers the login page.

export class ApiError extends Error {
  constructor(status, body) {
    const err = body && body.error;
    const lines = err && Array.isArray(err.errors) && err.errors.length ? err.errors.join("\n") : null;
    super(lines || (err && err.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export async function api(path, { method = "GET", body } = {}) {
  const init = { method, credentials: "same-origin", headers: { accept: "application/json" } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    window.location.reload();
    throw new ApiError(401, null);
  }
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const get = (path) => api(path);
export const post = (path, body) => api(path, { method: "POST", body });
export const patch = (path, body) => api(path, { method: "PATCH", body });
export const put = (path, body) => api(path, { method: "PUT", body });
