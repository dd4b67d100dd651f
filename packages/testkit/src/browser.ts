/**
 * A browser for the linking pages (ADR 0026), as an HTTP client: it follows redirects across
 * origins and keeps each origin's cookies, as a browser's user-agent does, without rendering.
 */
export class TestBrowser {
  readonly #jar = new Map<string, Map<string, string>>();
  /** Every address it opened, redirects included, in order. */
  readonly visited: string[] = [];

  /** Opens `start` and follows its redirects (unless `follow` is false): the last answer. */
  async go(start: string, follow = true): Promise<{ status: number; text: string; url: string }> {
    let url = new URL(start);
    for (let hops = 0; hops < 10; hops++) {
      this.visited.push(url.href);
      const jar = this.#jar.get(url.origin) ?? new Map<string, string>();
      this.#jar.set(url.origin, jar);
      const answer = await fetch(url, {
        redirect: 'manual',
        headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
      for (const set of answer.headers.getSetCookie()) {
        const [pair, ...attributes] = set.split(';');
        const [name, ...value] = pair!.split('=');
        if (attributes.some((a) => a.trim() === 'Max-Age=0')) jar.delete(name!.trim());
        else jar.set(name!.trim(), value.join('='));
      }
      const location = answer.headers.get('location');
      if (location === null || !follow) {
        return { status: answer.status, text: await answer.text(), url: url.href };
      }
      url = new URL(location, url);
    }
    throw new Error('too many redirects');
  }
}
