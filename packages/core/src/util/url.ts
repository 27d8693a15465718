/** Whether an input names an http(s) URL rather than a local path. */
export const isUrl = (s: string): boolean => /^https?:\/\//i.test(s);
