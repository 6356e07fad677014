import { text } from './alertmanager-integration.ts';
import { defineChannel } from './channel-descriptor.ts';
import { emailChannel } from './email.ts';
import { needSmtpUrl, needText } from './setting-fields.ts';

/** Email over SMTP; Alertmanager's `email_configs`. */
export const emailDescriptor = defineChannel({
  name: 'email',
  settings: { smtp_url: needSmtpUrl, from: needText, to: needText },
  sizeLimits: [],
  alertmanager: {
    key: 'email_configs',
    sendResolved: false,
    fields: ['to', 'from', 'smarthost', 'hello', 'auth_username', 'auth_password', 'require_tls', 'html', 'text', 'headers'],
    // `subject` is written as headers.Subject (alertmanager-receivers.ts reads it from there).
    templates: ['subject', 'html', 'text'],
    fieldOf: { smtp_url: 'smarthost' },
    settings: (raw, g, issue) => {
      const host = text(raw, 'smarthost') ?? g.smtp_smarthost;
      const from = text(raw, 'from') ?? g.smtp_from;
      if (!host) issue('smarthost', 'no smarthost here and no global smtp_smarthost');
      if (!from) issue('from', 'no from here and no global smtp_from');
      if (!text(raw, 'to')) issue('to', 'an email integration needs to');
      const user = text(raw, 'auth_username') ?? g.smtp_auth_username;
      const password = text(raw, 'auth_password') ?? g.smtp_auth_password;
      const auth = user ? `${encodeURIComponent(user)}${password ? `:${encodeURIComponent(password)}` : ''}@` : '';
      // Port 465 is implicit TLS; elsewhere STARTTLS, which Alertmanager requires unless require_tls
      // (or global smtp_require_tls) is false: sent as required, not merely taken when offered.
      const implicit = host?.endsWith(':465') === true;
      if (raw.require_tls !== undefined && typeof raw.require_tls !== 'boolean') issue('require_tls', 'expected true or false');
      const requireTls = typeof raw.require_tls === 'boolean' ? raw.require_tls : (g.smtp_require_tls ?? true);
      const hello = text(raw, 'hello') ?? g.smtp_hello;
      const query = new URLSearchParams({ ...(requireTls && !implicit ? { requireTLS: 'true' } : {}), ...(hello ? { name: hello } : {}) }).toString();
      return { smtp_url: `${implicit ? 'smtps' : 'smtp'}://${auth}${host ?? ''}${query ? `?${query}` : ''}`, from: from ?? '', to: text(raw, 'to') ?? '' };
    },
    examples: [
      {
        to: 'gpu-oncall@example.com',
        from: 'alertmanager@example.com',
        smarthost: 'smtp.example.com:587',
        hello: 'alertmanager.example.com',
        auth_username: 'alertmanager',
        auth_password: 'env:SMTP_PASSWORD',
        require_tls: true,
        html: '<p>{{ .CommonAnnotations.summary }}</p>',
        text: '{{ range .Alerts }}{{ .Annotations.summary }}\n{{ end }}',
        headers: { Subject: '{{ template "__subject" . }}' },
      },
    ],
  },
  create: (s, templates) => emailChannel({ smtp_url: s.smtp_url, from: s.from, to: s.to }, templates),
});
