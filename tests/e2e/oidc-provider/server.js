// A certified OpenID Connect provider (panva/node-oidc-provider) for the single sign-on tests.
// Configured by environment variables only (the test fixture sets them):
//   OIDC_PORT           the loopback port to listen on
//   OIDC_CLIENTS        JSON list of {client_id, client_secret, redirect_uris}
//   OIDC_USERS          JSON list of {login, email, email_verified, name}; `login` is the
//                       account id typed on the provider's (development) sign-in form and the
//                       `sub` claim the portal keys the identity on
// Its sign-in form accepts any password for a listed login (an unknown one is an error page):
// it stands in for an identity provider's own authentication, which the portal never sees.
import { randomBytes } from 'node:crypto';

import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const users = new Map(JSON.parse(process.env.OIDC_USERS).map((user) => [user.login, user]));

const provider = new Provider(issuer, {
  clients: JSON.parse(process.env.OIDC_CLIENTS),
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  async findAccount(ctx, id) {
    const user = users.get(id);
    if (!user) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: user.email, email_verified: user.email_verified, name: user.name };
      },
    };
  },
  // Every client here is the portal: its consent is implied, no second page.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  features: { devInteractions: { enabled: true } },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
