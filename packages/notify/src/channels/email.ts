import { createTransport, type Transporter } from 'nodemailer';
import { redactSecrets } from '@gpualert/log';
import type { Channel } from './channel.ts';
import { html, plainText, title } from './format.ts';

/** Email over SMTP through nodemailer: text and HTML, a subject with severity, host and what happened. */
export function emailChannel(settings: { smtp_url: string; from: string; to: string }): Channel {
  const transport: Transporter = createTransport(settings.smtp_url);
  return {
    name: 'email',
    async send(notification, signal) {
      try {
        const sending = transport.sendMail({ from: settings.from, to: settings.to, subject: title(notification), text: plainText(notification), html: html(notification) });
        // nodemailer takes no signal: on stop the attempt is given up (the outbox keeps it).
        const stopped = new Promise<never>((_, reject) => {
          if (signal?.aborted) reject(new Error('stopped'));
          signal?.addEventListener('abort', () => reject(new Error('stopped')), { once: true });
        });
        await (signal ? Promise.race([sending, stopped]) : sending);
        return { ok: true };
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        // 4xx SMTP replies are temporary; 5xx are permanent; no reply at all is the network.
        return { ok: false, retriable: code === undefined || code < 500, error: redactSecrets(`smtp: ${(error as Error).message}`) };
      }
    },
  };
}
