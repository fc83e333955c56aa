"""scikit-learn's search, with bo choosing the candidates: ``RandomizedSearchCV`` → ``BoSearchCV``.

    pip install ./clients/python scikit-learn scipy
    python clients/python/examples/sklearn_search.py --url http://127.0.0.1:8080
"""

import argparse

from scipy.stats import loguniform
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from bo_client.sklearn import BoSearchCV


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--n-iter", type=int, default=20)
    args = parser.parse_args()

    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, random_state=0)
    # Was: RandomizedSearchCV(SVC(), {...}, n_iter=20, cv=3, n_jobs=2)
    search = BoSearchCV(
        SVC(),
        {"C": loguniform(1e-2, 1e3), "gamma": loguniform(1e-5, 1e-1), "kernel": ["rbf", "poly"]},
        n_iter=args.n_iter,
        cv=3,
        n_jobs=2,
        url=args.url,
        api_key=args.api_key,
    )
    search.fit(x_train, y_train)
    print(f"best {search.best_params_}: cross-validated {search.best_score_:.3f}, held out {search.score(x_test, y_test):.3f}")


if __name__ == "__main__":
    main()
