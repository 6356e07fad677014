import { describe, expect, it } from 'vitest';
import { escapeChatMarkdown, escapeFeishuText, escapeJiraWiki, escapeSlack, jqlString, oneLine } from './escape.ts';

describe('one escaping function per markup', () => {
  it('Slack: `<!channel>` and `<http://evil|x>` stay text (no ping, no spoofed link)', () => {
    expect(escapeSlack('<!channel> <http://evil|click me> & co')).toBe('&lt;!channel&gt; &lt;http://evil|click me&gt; &amp; co');
  });
  it('Feishu, DingTalk, WeCom: `<at user_id="all">`, `<@all>`, `<font>` are no tags any more', () => {
    expect(escapeFeishuText('<at user_id="all">x</at>')).not.toMatch(/<at/);
    expect(escapeChatMarkdown('<@all> <font color="red">*x*</font> [a](b)')).not.toMatch(/<@|<font|[^\\][*[]/);
  });
  it('Jira wiki: `{code}`, `[link]`, `|`, `*` are literal', () => {
    expect(escapeJiraWiki('{code}x{code} [a|b] *y*')).toBe('\\{code\\}x\\{code\\} \\[a\\|b\\] \\*y\\*');
  });
  it('JQL: a quote in a value cannot end the literal; one line has no line break', () => {
    expect(jqlString('a" OR labels = "b')).toBe('"a\\" OR labels = \\"b"');
    expect(oneLine('a\nb\r\nc\u2028d')).toBe('a b c d');
  });
});
