import { createTransport, type Transporter } from 'nodemailer';
import type { Channel } from './channel.ts';
import { html, plainText, title } from './format.ts';

/** Email over SMTP through nodemailer: text and HTML, a subject with severity, host and what happened. */
export function emailChannel(settings: { smtp_url: string; from: string; to: string }): Channel {
  const transport: Transporter = createTransport(settings.smtp_url);
  return {
    name: 'email',
    async send(notification) {
      try {
        await transport.sendMail({ from: settings.from, to: settings.to, subject: title(notification), text: plainText(notification), html: html(notification) });
        return { ok: true };
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        // 4xx SMTP replies are temporary; 5xx are permanent; no reply at all is the network.
        return { ok: false, retriable: code === undefined || code < 500, error: `smtp: ${(error as Error).message}` };
      }
    },
  };
}
